"""The dynamics section's figures, drawn from its tables (:func:`isoflow.dynamics.report.read_runs`): measures against
the training step, a line per layer coloured by depth (the mean over the model's seeds, a band from the least to the
most of them, the first and last checkpoints marked), and the same means as layer × checkpoint maps, one colour scale
per measure. ``dynamics_measures``: six measures, a row of panels per model × corpus × points; ``dynamics_heatmaps``:
their maps; ``dynamics_cka``: each layer's CKA to the previous and to the last checkpoint, lines and maps, a row per
model × corpus (the comparisons are on words, whatever the points)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting.figures import grid, legend_below, save, share_limits, suptitle

# The measures drawn against the step, with their axis labels: the effective rank in both conventions (Li et al.'s
# RankMe of the explained variance, Garrido et al.'s of the singular values), α-ReQ as Li et al. fit it, IsoScore,
# TwoNN's intrinsic dimension and the mean cosine between points.
MEASURES = {
    "variance_effective_rank": "effective rank (RankMe, σ²: Li et al.)",
    "effective_rank": "effective rank (RankMe, σ: Garrido et al.)",
    "alpha_req_li": "α-ReQ (ranks 12–100, 1/k: Li et al.)",
    "isoscore": "IsoScore",
    "twonn": "intrinsic dimension (TwoNN)",
    "cosine_anisotropy": "mean cosine (anisotropy)",
}
CKA_MEASURES = {
    "cka_to_previous": "linear CKA to the previous checkpoint",
    "cka_to_last": "linear CKA to the last checkpoint",
}


POINTS = {"tokens": "every token", "last-token": "each sentence's last token"}


def _rows(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(title, rows) of each model × corpus (× points, where the table has them)."""
    keys = [k for k in ("model", "corpus", "points") if k in table]
    rows = []
    for values, part in table.groupby(keys, sort=True):
        named = dict(zip(keys, values))
        seeds = part.series.nunique()
        where = f"{POINTS.get(named['points'], named['points'])}, " if "points" in named else ""
        rows.append((f"{named['model']} on {named['corpus']}\n{where}{seeds} seed{'s' * (seeds != 1)}", part))
    return rows


def _lines(fig, axes, rows, measures: dict[str, str]) -> None:
    """Each of ``measures`` against the step (symmetric-log axis, so that step 0 shows) in ``axes`` (a row per
    :func:`_rows` row, a column per measure); each measure on one scale in every row; the layers' legend below."""
    import matplotlib
    import matplotlib.ticker

    depth = matplotlib.colormaps["viridis"]
    layers = sorted({layer for _, part in rows for layer in part.layer.unique()})
    handles = {}
    for r, (row_title, part) in enumerate(rows):
        for c, (measure, label) in enumerate(measures.items()):
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
            ax.margins(x=0.06)  # the end dots whole
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))  # 1,000, not 10³
            ax.set(xlabel="training step", ylabel=label)
            ax.set_title(row_title, fontsize=8)
            ax.grid(alpha=0.3)
    for c in range(len(measures)):
        share_limits([axes[r][c] for r in range(len(rows))])
    legend_below(fig, [handles[k] for k in sorted(handles)])


def _maps(fig, axes, rows, measures: dict[str, str]) -> None:
    """Each of ``measures`` as a layer × checkpoint map of its mean over seeds in ``axes`` (a row per :func:`_rows`
    row, a column per measure): the checkpoints in step order (evenly spaced, labelled by step), one colour scale per
    measure in every row."""
    for c, (measure, label) in enumerate(measures.items()):
        means = [part.groupby(["layer", "step"])[measure].mean().unstack("step") for _, part in rows]
        values = np.concatenate([m.to_numpy().ravel() for m in means])
        low, high = (np.nanmin(values), np.nanmax(values)) if np.isfinite(values).any() else (0.0, 1.0)
        for r, ((row_title, _), mean) in enumerate(zip(rows, means)):
            ax = axes[r][c]
            image = ax.imshow(mean.to_numpy(), origin="lower", aspect="auto", cmap="magma", vmin=low, vmax=high,
                              interpolation="nearest")  # fmt: skip
            steps = list(mean.columns)
            ticks = sorted({0, len(steps) - 1, *range(0, len(steps), max(1, len(steps) // 5))})
            ax.set_xticks(ticks, [f"{steps[i]:g}" for i in ticks], fontsize=7)
            ax.set_yticks(range(len(mean.index)), [f"{layer}" for layer in mean.index], fontsize=7)
            ax.set(xlabel="checkpoint (training step)", ylabel="layer")
            ax.set_title(f"{label}\n{row_title}", fontsize=7)
            fig.colorbar(image, ax=ax, shrink=0.85)


def measures_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    """:data:`MEASURES` against the step, a row per model × corpus × points."""
    rows = _rows(table)
    fig, axes = grid(len(rows), len(MEASURES), height=2.8 * len(rows) + 0.9, width=3.3)
    _lines(fig, axes, rows, MEASURES)
    suptitle(
        fig,
        "Across training: each layer's measures at every checkpoint (the mean over seeds; band: their range; dots: the "
        "first and last checkpoints)",
    )
    return save(fig, stem)


def heatmaps_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    """:data:`MEASURES` as layer × checkpoint maps, a row per model × corpus × points."""
    rows = _rows(table)
    fig, axes = grid(len(rows), len(MEASURES), height=3.0 * len(rows) + 0.9, width=3.2)
    _maps(fig, axes, rows, MEASURES)
    suptitle(
        fig,
        "Across training, layer by layer: each measure's mean over seeds at every checkpoint (columns in step order, "
        "evenly spaced; one colour scale per measure)",
    )
    return save(fig, stem)


def cka_figure(cka: pd.DataFrame, stem: Path) -> list[Path]:
    """Each layer's CKA to the same layer at the previous and at the last checkpoint against the step, then as maps; a
    row per model × corpus."""
    rows = _rows(cka)
    fig, axes = grid(len(rows), 2 * len(CKA_MEASURES), height=3.0 * len(rows) + 0.9, width=3.3)
    _lines(fig, axes[:, : len(CKA_MEASURES)], rows, CKA_MEASURES)
    _maps(fig, axes[:, len(CKA_MEASURES) :], rows, CKA_MEASURES)
    suptitle(
        fig,
        "How far each layer moves: linear CKA to the same layer at the previous checkpoint and at the last, on the "
        "same words (lines: the mean over seeds, band: their range, dots: the first and last checkpoints compared; "
        "maps: the mean; blank: the first has no previous checkpoint, the last is not compared with itself)",
    )
    return save(fig, stem)
