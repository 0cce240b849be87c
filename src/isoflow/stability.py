"""How stable IsoScore and IsoScore* are on mini-batches (I-STAR's AIM 1, the poster's Figure 4).

Gaussian point clouds of known isotropy: d dimensions with variances λ_i ∝ i^(−α), α chosen (bisection) so that the
*population* IsoScore (tr Σ)²/‖Σ‖²_F − 1)/(d − 1) is a set value (0.1 … 1.0; α = 0 is isotropic). From each, many
mini-batches of 8 … 1,024 points; for each batch IsoScore (ζ = 0) and IsoScore*_ζ with Σ_S the covariance of a large
fresh sample of the same distribution, as I-STAR estimates Σ_S from the training set. The question: how far, and how
variably, does a batch's estimate sit from the true value, and how much does shrinkage help?

:func:`simulate` gives one row per batch and ζ; :func:`summary` the mean and std per dim × true IsoScore × batch × ζ;
:func:`figure` the curves."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .settings import check, setting

REPORT_TABLES = ("stability",)  # what `isoflow stability` writes beside its runs: the workflow declares them from here
REPORT_FIGURES = ("stability",)

# numpy, pandas, torch and the metrics are imported where they are used: the CLI reads the settings for its help without
# loading them.


@dataclass(frozen=True)
class StabilitySettings:
    """The study's grid, declared once (the command line and the config schema's ``stability`` keys derive from it)."""

    dims: tuple[int, ...] = setting((384, 768), "dimensions of the clouds", minimum=2, metavar="D,D")
    true_isoscores: tuple[float, ...] = setting(
        tuple(round(0.1 * k, 1) for k in range(1, 11)),
        "population IsoScores of the clouds",
        exclusive_minimum=0.0,
        maximum=1.0,
        metavar="T,T",
    )
    batch_sizes: tuple[int, ...] = setting(
        (8, 16, 32, 64, 128, 256, 512, 1024), "points per mini-batch", minimum=2, metavar="N,N"
    )
    zetas: tuple[float, ...] = setting(
        (0.0, 0.1, 0.2, 0.5), "shrinkage weights; 0 is plain IsoScore", minimum=0.0, maximum=1.0, metavar="Z,Z"
    )
    repeats: int = setting(20, "batches per setting", minimum=1)
    reference_points: int = setting(100_000, "points of the fresh sample Sigma_S is estimated from", minimum=2)
    seed: int = setting(0, "seed of every draw", minimum=0)

    def __post_init__(self):
        for name in ("dims", "true_isoscores", "batch_sizes", "zetas"):  # lists from a config or JSON: kept as tuples
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        check(self)


def population_isoscore(variances) -> float:
    """IsoScore of a distribution with these principal variances: ((Σλ)²/Σλ² − 1)/(d − 1)."""
    import numpy as np

    v = np.asarray(variances, dtype=np.float64)
    return float((v.sum() ** 2 / (v * v).sum() - 1.0) / (len(v) - 1))


def spectrum(dim: int, target: float):
    """Variances λ_i ∝ i^(−α) (largest 1) whose population IsoScore is ``target`` (to 1e-10)."""
    import numpy as np

    if not 0.0 < target <= 1.0 or dim < 2:
        raise ValueError(f"the true IsoScore must lie in (0, 1] and dim be >= 2; got {target}, {dim}")
    i = np.arange(1, dim + 1, dtype=np.float64)
    if target == 1.0:
        return np.ones(dim)
    lo, hi = 0.0, 64.0  # IsoScore falls monotonically as α grows
    for _ in range(200):
        mid = (lo + hi) / 2
        if population_isoscore(i**-mid) > target:
            lo = mid
        else:
            hi = mid
    return i ** -((lo + hi) / 2)


def simulate(settings: StabilitySettings = StabilitySettings(), device="cpu", progress=None):
    """One row per dim × true IsoScore × batch size × repeat × ζ: the batch's estimate (``estimate``)."""
    import numpy as np
    import pandas as pd
    import torch

    from .istar import RunningCovariance
    from .metrics import covariance_tensor, isoscore_of_covariance

    check(settings)
    s = settings
    dims, true_isoscores, batch_sizes, zetas = s.dims, s.true_isoscores, s.batch_sizes, s.zetas
    repeats, reference_points, seed = s.repeats, s.reference_points, s.seed
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    rows = []
    cases = [(d, t) for d in dims for t in true_isoscores]
    for k, (d, t) in enumerate(cases):
        std = torch.as_tensor(np.sqrt(spectrum(d, t)), dtype=torch.float64, device=device)
        running = RunningCovariance()  # Σ_S: a large fresh sample of the same distribution
        for start in range(0, reference_points, 10_000):
            n = min(10_000, reference_points - start)
            running.update(torch.randn(n, d, generator=gen, dtype=torch.float64, device=device) * std)
        reference = running.covariance()
        for n in batch_sizes:
            for r in range(repeats):
                C = covariance_tensor(torch.randn(n, d, generator=gen, dtype=torch.float64, device=device) * std)
                for z in zetas:
                    rows.append((d, t, n, r, z, float(isoscore_of_covariance(C, reference, z))))
        if progress:
            progress(k + 1, len(cases))
    return pd.DataFrame(rows, columns=["dim", "true_isoscore", "batch", "repeat", "zeta", "estimate"])


SETTING = ["dim", "true_isoscore", "batch"]


def paired_with_isoscore(runs):
    """Per dim × true IsoScore × batch × ζ > 0, against plain IsoScore (ζ = 0) of the same batches (the batch is the
    unit): the mean paired difference of each batch's spread (|estimate − its setting's mean|: the poster's "stable")
    and of its absolute error (|estimate − true|: how close to the truth), each with its std over the batches and a
    95 % t-interval. Negative: shrinkage made the estimate steadier, or closer to the truth."""
    import pandas as pd

    from .reporting.significance import paired_columns

    level = runs.groupby([*SETTING, "zeta"])["estimate"].transform("mean")
    runs = runs.assign(
        spread=(runs["estimate"] - level).abs(), abs_error=(runs["estimate"] - runs["true_isoscore"]).abs()
    )
    plain = runs[runs["zeta"] == 0].set_index([*SETTING, "repeat"])
    rows = []
    for values, g in runs[runs["zeta"] > 0].groupby([*SETTING, "zeta"], sort=True):
        g = g.set_index([*SETTING, "repeat"])
        row = dict(zip([*SETTING, "zeta"], values))
        for measure in ("spread", "abs_error"):
            row.update(paired_columns(measure, (g[measure] - plain[measure].reindex(g.index)).to_numpy()))
        rows.append(row)
    return pd.DataFrame(rows)


def summary(runs):
    """Mean, std and mean error (estimate − true) per dim × true IsoScore × batch × ζ, and for ζ > 0 the paired
    comparison with plain IsoScore on the same batches (:func:`paired_with_isoscore`)."""
    g = runs.groupby([*SETTING, "zeta"], sort=True)["estimate"]
    table = g.agg(["mean", "std", "count"]).reset_index()
    table["error"] = table["mean"] - table["true_isoscore"]
    table = table.rename(columns={"count": "batches"})
    return table.merge(paired_with_isoscore(runs), on=[*SETTING, "zeta"], how="left")


CAPTION = (
    "IsoScore (ζ = 0) and IsoScore*_ζ of mini-batches drawn from Gaussians of known isotropy (true IsoScore of the "
    "population covariance), Σ_S the covariance of a large fresh sample: mean and std over batches, and the mean "
    "error; for ζ > 0, paired with IsoScore (ζ = 0) on the same batches: the mean difference of the batches' spread "
    "(|estimate − mean|) and of their absolute error (|estimate − true|), std and 95 % t-interval over the batches."
)


def tables(runs, out_dir: str | os.PathLike) -> list[Path]:
    from .reporting import write_table

    return write_table(summary(runs), Path(out_dir) / "stability", caption=CAPTION, floatfmt="%.4f")


def figure(runs, out_dir: str | os.PathLike) -> list[Path]:
    """One panel per dim × ζ: the batches' mean estimate (± std) against the batch size, a curve per true IsoScore,
    its true value dashed (the poster's Figure 4)."""
    import matplotlib
    import numpy as np

    from .reporting.figures import grid, legend_below, save, suptitle

    table = summary(runs)
    dims, zetas = sorted(table.dim.unique()), sorted(table.zeta.unique())
    truths = sorted(table.true_isoscore.unique())
    colours = dict(zip(truths, matplotlib.colormaps["viridis"](np.linspace(0, 0.95, len(truths)))))
    fig, axes = grid(len(dims), len(zetas), 3.2 * len(dims) + 0.8, width=3.4)
    for i, d in enumerate(dims):
        for j, z in enumerate(zetas):
            ax = axes[i, j]
            for t in truths:
                rows = table[(table.dim == d) & (table.zeta == z) & (table.true_isoscore == t)]
                ax.errorbar(
                    rows["batch"],
                    rows["mean"],
                    yerr=rows["std"],
                    color=colours[t],
                    lw=1.2,
                    capsize=2,
                    label=f"true {t:g}",
                )
                ax.axhline(t, color=colours[t], ls="--", lw=0.7)
            ax.set_xscale("log", base=2)
            ax.set_ylim(-0.02, 1.05)
            ax.set_title(f"d = {d}, " + ("IsoScore (ζ = 0)" if z == 0 else f"IsoScore*, ζ = {z:g}"), fontsize=9)
            ax.set_xlabel("points per batch")
            ax.set_ylabel("estimate (mean ± std)")
            ax.grid(alpha=0.3)
    legend_below(fig, axes[0, 0].get_legend_handles_labels()[0])
    suptitle(
        fig,
        "IsoScore and IsoScore* on mini-batches of Gaussian point clouds of known isotropy (dashed: the true value)",
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return save(fig, out / "stability")
