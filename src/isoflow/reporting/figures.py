"""Figures that read without the text: headless pyplot, one panel grid, titles wrapped to the figure's width, one
colour per λ and one per model in every figure, saved reproducibly (no timestamp: the same data give byte-identical
files, which DVC compares)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ..atomic import atomic_file


def pyplot():
    """matplotlib.pyplot on the headless Agg backend (set once; figures are files, never windows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def grid(nrow: int, ncol: int, height: float, width: float = 3.8):
    """(figure, nrow × ncol array of axes), ``width`` inches per panel (at least 6 in all), ``height`` in all."""
    return pyplot().subplots(
        nrow, ncol, figsize=(max(width * ncol, 6.0), height), squeeze=False, constrained_layout=True
    )


def panels(n: int, width: float = 3.8, height: float = 3.0):
    """(figure, list of n axes): at most 4 panels to a row, the unused ones of the last row hidden."""
    ncol = min(4, n)
    nrow = -(-n // ncol)
    fig, axes = grid(nrow, ncol, height * nrow, width)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return fig, list(axes.flat)


def suptitle(fig, text: str, fontsize: float = 10) -> None:
    """A figure title wrapped to the figure's width, so that a one-panel figure does not clip it."""
    chars = int(fig.get_figwidth() * 72 / (0.55 * fontsize))  # ~0.55 em per character
    fig.suptitle(textwrap.fill(text, max(chars, 30)), fontsize=fontsize)


# A scatter of more points than this is drawn as an image inside the PDF (the axes, labels and lines stay vectors): as
# vectors, the layer views' thousands of points made 10-12 MB files that took seconds to draw and to open.
RASTER_POINTS = 500


def rasterize_dense_scatters(fig) -> None:
    """Mark every scatter of more than RASTER_POINTS points for rasterizing in vector formats (raster formats draw the
    same pixels either way): a 2-D one alone; a 3-D panel whole, labels too (matplotlib ignores the mark on a 3-D
    collection)."""
    for ax in fig.axes:
        dense = [coll for coll in ax.collections if len(coll.get_offsets()) > RASTER_POINTS]
        if dense and ax.name == "3d":
            ax.set_rasterized(True)
        else:
            for coll in dense:
                coll.set_rasterized(True)


def save(fig, stem: Path) -> list[Path]:
    """``stem``.png (150 dpi) and ``stem``.pdf (dense scatters as 150-dpi images in it), written atomically; the figure
    is closed."""
    rasterize_dense_scatters(fig)
    paths = []
    for suffix in (".png", ".pdf"):
        path = Path(stem).with_suffix(suffix)
        with atomic_file(path) as tmp:
            fig.savefig(tmp, dpi=150, format=suffix[1:], metadata={"CreationDate": None} if suffix == ".pdf" else None)
        paths.append(path)
    pyplot().close(fig)
    return paths


# One colour per model, fixed by its name in every figure (the built-in models and the project's own pretrained ones);
# any other name gets a colour of the rest of the palette picked by a stable hash of the name.
MODEL_COLOURS = {
    "minilm": "#1f77b4",
    "mpnet": "#ff7f0e",
    "glove-50d": "#2ca02c",
    "word2vec-222": "#8c564b",
    "distilroberta": "#9467bd",
    "plain-bert": "#d62728",
    "plain-gpt2": "#17becf",
    "minilm-words": "#aec7e8",
    "mpnet-words": "#ffbb78",
    "smollm2-135m": "#e377c2",
    "gemma3-270m": "#bcbd22",
}
_OTHER_COLOURS = ("#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173")


def message_figure(stem: Path, text: str) -> list[Path]:
    """A figure that says in words why it has nothing to draw (the workflow declares it; an empty frame would read as
    a broken plot)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9)
    return save(fig, stem)


def model_colour(name: str) -> str:
    """A model's colour: the same in every figure, whatever else a figure shows."""
    import zlib

    return MODEL_COLOURS.get(name) or _OTHER_COLOURS[zlib.crc32(name.encode()) % len(_OTHER_COLOURS)]


# One colour per λ, fixed in every figure: blues where isotropy is pushed down (λ < 0), reds where pushed up, darker
# the larger |λ|, black for the plain run; none near white. CosReg, the other regulariser, is grey.
LAMBDA_COLOURS = {
    -5.0: "#08306b",
    -3.0: "#2166ac",
    -1.0: "#4393c3",
    -0.5: "#74add1",
    0.0: "#000000",
    0.5: "#f4a582",
    1.0: "#d6604d",
    3.0: "#b2182b",
    5.0: "#67001f",
}
COSREG_COLOUR = "#7f7f7f"
CONTROL_COLOUR = "#8c564b"  # the strength-matched control's loss (isoflow.istar.MeanDirectionLoss): no λ, no CosReg


def lambda_colour(lam: float) -> str:
    """λ's colour: the palette's for the weights the posters use, else one of the same scale (|λ| capped at 5)."""
    lam = float(lam)
    if lam in LAMBDA_COLOURS:
        return LAMBDA_COLOURS[lam]
    import matplotlib

    strength = 0.25 + 0.25 * min(abs(lam), 5.0) / 5.0  # 0.25..0.5 from the centre of coolwarm: never its white middle
    return matplotlib.colors.to_hex(matplotlib.colormaps["coolwarm"](0.5 + (strength if lam > 0 else -strength)))


def lambda_colours(lams) -> dict:
    """λ → its colour (:func:`lambda_colour`), the same in every figure."""
    return {lam: lambda_colour(lam) for lam in lams}


MINUS = "\u2212"  # the minus sign matplotlib's tick labels use (axes.unicode_minus), not a hyphen


def signed(value: float) -> str:
    """``value`` as ``{:g}`` writes it, with the minus sign of the axes' tick labels: ``−1``, ``0.5``."""
    return f"{float(value):g}".replace("-", MINUS)


def lambda_value(lam: float, unit: str = "") -> str:
    """λ as a figure writes it: ``−1`` (:func:`signed`); where λ is given in units of ``unit`` (a λ set by the
    penalty's pull, in units of λ*), ``−λ*``, ``λ*``, ``0.0016 λ*`` — the value a reader would otherwise take for the
    weight itself."""
    lam = float(lam)
    if not unit or lam == 0:
        return signed(lam)
    if abs(lam) == 1:
        return f"{MINUS}{unit}" if lam < 0 else unit
    return f"{signed(lam)} {unit}"


def plain_log_axis(ax, axis: str = "y") -> None:
    """A logarithmic ``axis`` ("x" or "y") labelled 5, 10, 20, 50, … rather than 5×10⁰."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    getattr(ax, f"set_{axis}scale")("log")
    scale = getattr(ax, f"{axis}axis")
    scale.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    scale.set_major_formatter(ScalarFormatter())
    scale.set_minor_formatter(NullFormatter())


LOG_SPAN = 100.0  # a panel whose positive values span this ratio or more is drawn on a log axis


def log_axis_if_it_spans(values, *axes, axis: str = "y") -> bool:
    """Log ``axis`` ("x" or "y"; labelled as :func:`plain_log_axis` does) for ``axes`` where ``values`` are all
    positive and span ``LOG_SPAN`` or more — on a linear axis everything below 1 % of the largest would lie on zero;
    panels compared with each other take one decision from all their values. Returns whether."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0 or v.min() <= 0:
        return False
    span = v.max() / v.min()
    if span < LOG_SPAN:
        return False
    for ax in axes:  # up to three decades labelled 5, 10, 20, …; beyond, one tick a decade (10⁻⁵, as matplotlib writes)
        if span < 1e3:
            plain_log_axis(ax, axis)
        else:
            getattr(ax, f"set_{axis}scale")("log")
    return True


def share_limits(axes, axis: str = "y") -> None:
    """Every one of ``axes`` given the limits on ``axis`` ("x" or "y") that hold all of them: panels compared with each
    other on one scale."""
    limits = [getattr(ax, f"get_{axis}lim")() for ax in axes]
    low, high = min(lo for lo, _ in limits), max(hi for _, hi in limits)
    for ax in axes:
        getattr(ax, f"set_{axis}lim")(low, high)


def legend_below(fig, handles, fontsize: float = 7) -> None:
    """One legend below the panels, in as few rows as fit the figure's width (matplotlib clips a legend wider than its
    figure instead of wrapping it), the rows as even as they can be and read left to right, top to bottom: eight
    entries that need two rows make 4 + 4 in their order, not 7 + 1."""
    renderer = fig.canvas.get_renderer()

    def fits(ncol: int) -> bool:
        legend = fig.legend(
            handles=row_major(handles, ncol), loc="outside lower center", ncol=ncol, fontsize=fontsize, frameon=False
        )
        if ncol == 1 or legend.get_window_extent(renderer).width <= fig.bbox.width:
            return True
        legend.remove()
        return False

    for rows in range(1, len(handles) + 1):
        if fits(-(-len(handles) // rows)):
            return


def row_major(handles: list, ncol: int) -> list:
    """``handles`` reordered so that matplotlib, which fills a legend column by column, shows them row by row.

    With ``ncol`` = ceil(n / rows) every row but the last is full, and matplotlib's split of n entries into ``ncol``
    columns (the first n mod ncol one longer) is exactly the columns of that row-by-row layout."""
    rows = -(-len(handles) // ncol)
    return [handles[r * ncol + c] for c in range(ncol) for r in range(rows) if r * ncol + c < len(handles)]


def lambda_legend(fig, colour: dict, markers: dict | None = None, extra=(), unit: str = "") -> None:
    """One legend for the whole figure, below the panels: a colour per λ (in units of ``unit``: :func:`lambda_value`;
    and a marker per model, if several; then ``extra`` handles)."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=c, marker="o", ls="", label=f"λ = {lambda_value(lam, unit)}") for lam, c in colour.items()
    ]
    if markers and len(markers) > 1:
        handles += [
            Line2D([], [], color="0.4", marker=m, ls="", mfc="none", label=model) for model, m in markers.items()
        ]
    legend_below(fig, [*handles, *extra])


WRAP = 3  # task panels to a row where each task has several panels


def lambda_points_figure(
    table: pd.DataFrame,
    x: str,
    y: str | tuple[str, ...],
    xlabel: str,
    ylabel: str | tuple[str, ...],
    title: str,
    stem: Path,
    ymax: tuple[float | None, ...] | None = None,
    ylabel_of: dict[str, str] | None = None,
    unit: str = "",
) -> list[Path]:
    """One panel per task: ``{y}_mean`` against ``{x}_mean`` with std error bars, one point per λ (its colour in the
    legend below), one marker per model (named in the panel's title where it is the only one, else in the legend):
    I-STAR's Figure 5 layout, used by the optimisation's sweep and fine-tuning.
    Several ``y`` (with as many ``ylabel``) give each task that many panels, one above the other, each ``y`` on one
    scale across the tasks; ``ymax``: an upper end per ``y`` (an accuracy's axis stops at 1); ``ylabel_of``: a task's
    own y label (its metric), where tasks differ; ``unit``: λ's unit in the legend (:func:`lambda_value`)."""
    ys, ylabels = ((y,), (ylabel,)) if isinstance(y, str) else (tuple(y), tuple(ylabel))
    tops = dict(zip(ys, ymax or (None,) * len(ys)))
    colour = lambda_colours(sorted(table.istar_lambda.unique()))
    tasks = sorted(table.task.unique())
    if len(ys) == 1:
        fig, axes = panels(len(tasks), height=3.3)
        cells = [(ax, task, ys[0], ylabels[0]) for ax, task in zip(axes, tasks)]
    else:  # the tasks wrap into rows of WRAP panels, each task with its y's one above the other
        ncol = min(WRAP, len(tasks))
        blocks = -(-len(tasks) // ncol)
        fig, axes = grid(len(ys) * blocks, ncol, 2.9 * len(ys) * blocks + 0.6, width=3.8)
        cells = [
            (axes[len(ys) * (j // ncol) + i, j % ncol], task, yi, li)
            for i, (yi, li) in enumerate(zip(ys, ylabels))
            for j, task in enumerate(tasks)
        ]
        for j in range(len(tasks), blocks * ncol):
            for i in range(len(ys)):
                axes[len(ys) * (j // ncol) + i, j % ncol].axis("off")
    markers = dict(zip(sorted(table.model.unique()), "osD^v"))
    for ax, task, col, label in cells:
        for model, rows in table[table.task == task].groupby("model"):
            rows = rows.dropna(subset=[f"{col}_mean"]).sort_values("istar_lambda")
            ax.errorbar(
                rows[f"{x}_mean"],
                rows[f"{col}_mean"],
                xerr=rows[f"{x}_std"],
                yerr=rows[f"{col}_std"],
                fmt=markers[model],
                ls="-",
                lw=0.8,
                color="0.6",
                ecolor="0.4",
                mfc="none",
                capsize=2,
            )
            ax.scatter(
                rows[f"{x}_mean"],
                rows[f"{col}_mean"],
                color=[colour[v] for v in rows.istar_lambda],
                marker=markers[model],
                zorder=3,
            )
        models = sorted(table[table.task == task].model.unique())  # several: told apart by marker, in the legend
        ax.set_title(f"{task} x {models[0]}" if len(models) == 1 else task, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel((ylabel_of or {}).get(task, label))
        ax.grid(alpha=0.3)
    if len(ys) > 1:  # each y on one scale across the tasks, stopping at its upper end (with room for a marker on it)
        for col in ys:
            used = [ax for ax, _, c, _ in cells if c == col]
            low, high = min(ax.get_ylim()[0] for ax in used), max(ax.get_ylim()[1] for ax in used)
            if tops.get(col) is not None:
                high = min(high, tops[col] + 0.02 * (tops[col] - low))
            for ax in used:
                ax.set_ylim(low, high)
    lambda_legend(fig, colour, markers, unit=unit)
    suptitle(fig, title)
    return save(fig, stem)


def trajectory(
    ax, x: pd.Series, y: pd.Series, colour: str, *, label: str | None = None, lw: float = 1.2, ls: str = "-"
) -> None:
    """A path through (x, y) in order, an open circle at its start and a dot at its end (every trajectory figure's
    convention; :func:`trajectory_ends` names them in a legend)."""
    ax.plot(x, y, ls, color=colour, lw=lw, label=label)
    ax.scatter(x.iloc[:1], y.iloc[:1], facecolor="none", edgecolor=colour, s=30, zorder=3)
    ax.scatter(x.iloc[-1:], y.iloc[-1:], color=colour, s=20, zorder=3)


def trajectory_ends(order: str) -> list:
    """Legend entries for :func:`trajectory`'s markers: the open circle at ``order`` 0 (step or epoch), the dot at the
    end."""
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], ls="", marker="o", markerfacecolor="none", markeredgecolor="0.3", label=f"start ({order} 0)"),
        Line2D([], [], ls="", marker="o", color="0.3", markersize=4, label="end"),
    ]


def lambda_curves_figure(
    mean: pd.DataFrame,
    order: str,
    xlabel: str,
    ylabel: str,
    title: str,
    stem: Path,
    *,
    one_scale: bool = False,
    unit: str = "",
) -> list[Path]:
    """One panel per task × model: seed-mean silhouette against IsoScore, one curve per λ in ``order`` (step or epoch),
    an open circle at its start and a dot at its end (:func:`trajectory`). Used by the optimisation's sweep and
    fine-tuning. With ``one_scale`` every panel has the same axes, IsoScore on a log axis where it spans
    ``LOG_SPAN`` or more (a non-linear head's hidden output: from about 0.2 to 1e-5, most of it in the first
    updates). ``unit``: λ's unit in the legend (:func:`lambda_value`)."""

    pairs = sorted({(t, m) for t, m in zip(mean.task, mean.model)})
    colour = lambda_colours(sorted(mean["istar_lambda"].unique()))
    fig, axes = panels(len(pairs), height=3.3)
    for ax, (task, model) in zip(axes, pairs):
        for lam, m in mean[(mean.task == task) & (mean.model == model)].groupby("istar_lambda"):
            m = m.sort_values(order)
            trajectory(ax, m["isoscore"], m["silhouette"], colour[lam])
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    if one_scale:
        shown = axes[: len(pairs)]
        log_axis_if_it_spans(mean["isoscore"], *shown, axis="x")
        share_limits(shown, "x")
        share_limits(shown, "y")
    lambda_legend(fig, colour, extra=trajectory_ends(order), unit=unit)
    suptitle(fig, title)
    return save(fig, stem)
