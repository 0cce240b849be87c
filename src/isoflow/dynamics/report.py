"""The dynamics section's report: every checkpoint's layers in one table, and each measure against the training step.

Each run is a checkpoint × corpus measurement (``runs/<series>/<corpus>/<revision>/``, a layers analysis: its
``layers.parquet``). The table (``dynamics``) is their rows, each with its series, the model it is a seed of (the
series' name without ``-seed<N>``: ``plain-gpt2-seed1`` is a seed of ``plain-gpt2``), its revision and its step. The
figure (``dynamics_measures``) draws five measures against the step (a symmetric-log axis, so that step 0 shows), one
row of panels per model and corpus, one line per layer coloured by depth: the mean over the model's seeds, a band from
their smallest to their largest value; the first and the last checkpoint marked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..layout import DYNAMICS_RUN, read_identity
from ..reporting.figures import grid, legend_below, save, share_limits, suptitle
from ..reporting.tables import write_table

# The measures drawn, with their axis labels: the effective rank in both conventions (Li et al.'s RankMe of the
# explained variance, Garrido et al.'s of the singular values), IsoScore, TwoNN's intrinsic dimension and the mean
# cosine between points.
MEASURES = {
    "variance_effective_rank": "effective rank (RankMe, σ²: Li et al.)",
    "effective_rank": "effective rank (RankMe, σ: Garrido et al.)",
    "isoscore": "IsoScore",
    "twonn": "intrinsic dimension (TwoNN)",
    "cosine_anisotropy": "mean cosine (anisotropy)",
}
STEP = re.compile(r"step(\d+)")  # Pythia's step1000, OLMo's step1000-tokens4B, our step<N>
SEED = re.compile(r"-seed\d+$")


def read_runs(folders: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """The layers rows of every run folder (``.../runs/<series>/<corpus>/<revision>``), with series, model, revision and
    step first; a folder that is not such a run, or a revision without a step, is refused in one line."""
    frames = []
    for folder in map(Path, folders):
        named = read_identity(DYNAMICS_RUN, "/".join(folder.parts[-3:]))
        if named is None or not (folder / "layers.parquet").is_file():
            raise FileNotFoundError(
                f"{folder}: not a checkpoint's measurement (<series>/<corpus>/<revision>/layers.parquet); run "
                "`snakemake dynamics_runs` first"
            )
        step = STEP.match(named["revision"])
        if step is None:
            raise ValueError(f"{folder}: revision {named['revision']!r} names no step (step<N>); rename its folder")
        frame = pd.read_parquet(folder / "layers.parquet").drop(columns=["model", "corpus"], errors="ignore")
        ids = {
            "model": SEED.sub("", named["series"]),
            "series": named["series"],
            "corpus": named["corpus"],
            "revision": named["revision"],
            "step": int(step.group(1)),
        }
        for i, (key, value) in enumerate(ids.items()):
            frame.insert(i, key, value)
        frames.append(frame)
    if not frames:
        raise ValueError("no runs given; the report reads the dynamics section's run folders")
    return pd.concat(frames, ignore_index=True).sort_values(["model", "corpus", "series", "step", "layer"])


def measures_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    """Each measure against the step: a row of panels per model × corpus, a line per layer (mean over seeds, band from
    the least to the most of them), the first and last checkpoints marked; each measure on one scale in every row."""
    import matplotlib
    import matplotlib.ticker

    rows = list(table.groupby(["model", "corpus"], sort=True))
    fig, axes = grid(len(rows), len(MEASURES), height=2.8 * len(rows) + 0.9, width=3.3)
    depth = matplotlib.colormaps["viridis"]
    layers = sorted(table.layer.unique())
    handles = {}
    for r, ((model, corpus), part) in enumerate(rows):
        seeds = part.series.nunique()
        for c, (measure, label) in enumerate(MEASURES.items()):
            ax = axes[r][c]
            for layer in layers:
                at = part[part.layer == layer].groupby("step")[measure].agg(["mean", "min", "max"]).dropna()
                if at.empty:
                    continue
                colour = depth(layer / max(1, len(layers) - 1))
                (line,) = ax.plot(at.index, at["mean"], color=colour, lw=1.2, label=f"layer {layer}")
                ax.fill_between(at.index, at["min"], at["max"], color=colour, alpha=0.18, lw=0)
                ax.plot(at.index[[0, -1]], at["mean"].iloc[[0, -1]], ls="none", marker="o", ms=3.5, color=colour)
                handles.setdefault(layer, line)
            ax.set_xscale("symlog", linthresh=1)
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))  # 1,000, not 10³
            ax.set(xlabel="training step", ylabel=label)
            ax.set_title(f"{model} on {corpus} ({seeds} seed{'s' * (seeds != 1)})", fontsize=8)
            ax.grid(alpha=0.3)
    for c in range(len(MEASURES)):
        share_limits([axes[r][c] for r in range(len(rows))])
    legend_below(fig, [handles[k] for k in sorted(handles)])
    suptitle(
        fig,
        "Across training: each layer's measures at every checkpoint (the mean over seeds; band: their range; dots: the "
        "first and last checkpoints)",
    )
    return save(fig, stem)


def dynamics_report(folders: Sequence[str | os.PathLike], tables: str | os.PathLike, figures: str | os.PathLike):
    """The table and the figure of the run folders; returns the paths written."""
    table = read_runs(folders)
    caption = (
        "Every checkpoint's layers: the layers section's measures of each checkpoint of each series, on the same "
        "tokens at every checkpoint (series: a pretraining run; model: what it is a seed of; step: the checkpoint's)"
    )
    return write_table(table, Path(tables) / "dynamics", caption=caption) + measures_figure(
        table, Path(figures) / "dynamics_measures"
    )
