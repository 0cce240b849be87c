"""Figures over layer analyses (the outputs of :func:`isoflow.layers.run_layers`, as read by
:func:`isoflow.layers.report.load`).

Figures: ``layers_similarity`` (S_inter and S_intra per layer, before and after cluster-centring),
``layers_isoscore`` (IsoScore before and after centring), ``layers_lid`` (LID per layer on a log axis, their Figure
9, with the static baselines), ``layers_spectrum`` (effective rank, participation ratio, stable rank, α-ReQ and
uniformity per layer, also without the outlier dimensions and without first positions), ``layers_kmeans`` (the best
silhouette per layer with its spread, with and without first tokens, and the symbol/word split), ``layers_orderings``
(|ρ| of the components with position and frequency per layer), ``layers_pca`` (2-D and 3-D views of the middle layer
by cluster, position and frequency), ``layers_roll`` (the views at the depth of Cai et al.'s GPT-2 "Swiss roll", by
position), ``layers_outliers`` (mean |activation| per dimension and layer, one colour scale per model),
``layers_types`` (S_inter against the number of types) and ``layers_cka`` (CKA between every pair of layers): the
last two from :mod:`.compare`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting.figures import legend_below, message_figure, model_colour, plain_log_axis, pyplot, save, suptitle
from . import PCS, ROLL_LARGEST, SPECTRUM
from .compare import DEPTH_LABEL, cka_figure, cross_figure, types_figure

# Models of 5 to 31 states share a panel: each is drawn over its relative depth, so that its first and last layers
# line up with the others' (the tables keep the layer index); DEPTH_LABEL names that axis.


def depth(g: pd.DataFrame) -> pd.Series:
    """A model's layers as fractions of its deepest one (one model's rows)."""
    return g["layer"] / max(int(g["layer"].max()), 1)


def figures(
    layers: pd.DataFrame,
    views: pd.DataFrame,
    out_dir: str | os.PathLike,
    extra: dict[str, pd.DataFrame] | None = None,
    metas: dict[str, dict] | None = None,
) -> list[Path]:
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = extra or {}
    if metas is not None:
        layers = with_input_tables(layers, metas)
    colour = {m: model_colour(m) for m in layers["model"].unique()}
    corpora = sorted(layers["corpus"].unique())
    ctx, static = layers[~layers["static"]], layers[layers["static"]]
    written = []

    def per_layer(name, panels, title, ylabel, *, log=(), variants=CENTRED, baselines=None):
        key = ModelsAndStyles()
        fig, axes = plt.subplots(
            len(panels),
            len(corpora),
            figsize=(max(4.2 * len(corpora), 6.0), 3.0 * len(panels)),
            squeeze=False,
            constrained_layout=True,
        )
        for j, corpus in enumerate(corpora):
            for i, (col, label) in enumerate(panels):
                ax = axes[i, j]
                for model, g in ctx[ctx.corpus == corpus].groupby("model"):
                    if col not in g or g[col].isna().all():
                        continue  # a run made before this measure existed
                    g = g.sort_values("layer")
                    ax.plot(depth(g), g[col], "-o", ms=3, color=colour[model])
                    key.draw(model, "each layer", ls="-", marker="o", ms=3)
                    for suffix, what, ls in variants:
                        other = f"{col}{suffix}"
                        if other in g and g[other].notna().any():
                            ax.plot(depth(g), g[other], ls=ls, color=colour[model])
                            key.draw(model, f"each layer, {what}", ls=ls)
                for model, g in static[static.corpus == corpus].groupby("model"):
                    if col in g and g[col].notna().any():
                        ax.axhline(g[col].iloc[0], ls=":", color=colour[model])
                        key.draw(model, "static vectors", ls=":")
                for model, value, what in (baselines or {}).get((corpus, col), []):
                    ax.axhline(value, ls=(0, (1, 3)), lw=1.2, color=colour[model])
                    key.draw(model, what, ls=(0, (1, 3)), lw=1.2)
                ax.set_title(f"{label} — {corpus}", fontsize=9)
                ax.set_xlabel(DEPTH_LABEL)
                ax.set_ylabel(ylabel if len(panels) == 1 else label)
                if col in log:
                    plain_log_axis(ax)
                ax.grid(alpha=0.3, which="both" if col in log else "major")
        legend_below(fig, key.handles(colour))
        suptitle(fig, title)
        return save(fig, out_dir / name)

    written += per_layer(
        "layers_similarity",
        [("s_inter", "S_inter"), ("s_intra", "S_intra")],
        "Inter- and intra-type cosine per layer; dashed: after subtracting each cluster's mean",
        "cosine",
    )
    written += per_layer(
        "layers_isoscore", [("isoscore", "IsoScore")], "IsoScore per layer; dashed: cluster-centred", "IsoScore"
    )
    written += per_layer(
        "layers_lid",
        [("lid_euclidean", "LID (Euclidean)"), ("lid_cosine", "LID (cosine)")],
        "Local intrinsic dimension per layer (k-NN MLE, log axis); dotted: static vectors and each model's "
        "input-embedding rows",
        "LID",
        log=("lid_euclidean", "lid_cosine"),
        variants=(),
        baselines=_input_table_baselines(ctx),
    )
    # Every figure is written (the workflow declares them): one without data says so.
    spectral = "effective_rank" in ctx and ctx["effective_rank"].notna().any()
    written += (
        per_layer(
            "layers_spectrum",
            SPECTRUM_PANELS,
            "Spectrum and uniformity per layer (log axes for the ranks); dashed: without the outlier dimensions, "
            "dash-dot: without first positions",
            "",
            log=SPECTRUM_LOG,
            variants=WITHOUT_OUTLIERS_OR_FIRST,
        )
        if spectral
        else _empty(out_dir, "layers_spectrum", NO_RUNS)
    )
    measured = "cluster_silhouette_low" in ctx and len(ctx)
    written += kmeans_figure(ctx, colour, out_dir) if measured else _empty(out_dir, "layers_kmeans", NO_RUNS)
    written += orderings_figure(ctx, colour, out_dir) if measured else _empty(out_dir, "layers_orderings", NO_RUNS)
    middle = views[views["view"] == "middle"]
    written += (
        pca_figure(middle, out_dir, "layers_pca", "the middle layer")
        if len(middle)
        else _empty(out_dir, "layers_pca", "no view of a middle layer among the analyses given")
    )
    positioned = views[views["position"].notna()] if "position" in views else views.iloc[0:0]
    roll, largest = (positioned[positioned["view"] == name] for name in ("roll", ROLL_LARGEST))
    written += roll_figure(roll, out_dir, largest) if len(roll) else _empty(out_dir, "layers_roll", NO_RUNS)
    dims = extra.get("dims", pd.DataFrame())
    written += outliers_figure(dims, out_dir) if len(dims) else _empty(out_dir, "layers_outliers", NO_RUNS)
    curve, cka = extra.get("types", pd.DataFrame()), extra.get("cka", pd.DataFrame())
    written += types_figure(curve, out_dir) if len(curve) else _empty(out_dir, "layers_types", NO_RUNS)
    written += cka_figure(cka, out_dir) if len(cka) else _empty(out_dir, "layers_cka", NO_RUNS)
    cross = extra.get("cross", pd.DataFrame())
    written += (
        cross_figure(cross, out_dir)
        if len(cross)
        else _empty(out_dir, "layers_cross", "no comparison of two models' layers among the runs given")
    )
    return written


NO_RUNS = "no contextual model's run with these measurements among the analyses given"


def _empty(out_dir: Path, name: str, text: str) -> list[Path]:
    return message_figure(out_dir / name, text)


# A per-layer panel's other readings of its measure, drawn beside the plain one: (column suffix, legend text, style).
CENTRED = (("_centred", "cluster-centred", "--"),)
WITHOUT_OUTLIERS_OR_FIRST = (
    ("_removed", "without the outlier dimensions", "--"),
    ("_nofirst", "without first positions", "-."),
)
# The spectrum figure's panels: every spectrum column, then uniformity (not measured without outlier dimensions); a
# column added to SPECTRUM without its label here fails at import, not in a figure drawn without it.
_SPECTRUM_LABELS = {
    "effective_rank": "Effective rank (RankMe)",
    "participation_ratio": "Participation ratio",
    "stable_rank": "Stable rank",
    "alpha_req": "α-ReQ (eigenvalue decay)",
    "uniformity": "Uniformity (t = 2)",
}
SPECTRUM_PANELS = tuple((name, _SPECTRUM_LABELS[name]) for name in (*SPECTRUM, "uniformity"))
# On log axes: the sizes (numbers of directions, 1 to d); α-ReQ is an exponent.
SPECTRUM_LOG = tuple(name for name in SPECTRUM if name != "alpha_req")


class ModelsAndStyles:
    """A legend of two keys for panels where each model is drawn several ways: one entry per model (its colour) and
    one per line style (grey), each named once, in the order first drawn, instead of one entry per model and style
    (seven models drawn raw and cluster-centred made fourteen entries, their pairs split across the legend's rows)."""

    def __init__(self) -> None:
        self.models: list[str] = []
        self.styles: dict[str, dict] = {}

    def draw(self, model: str, style: str, **line) -> None:
        """Note that ``model`` was drawn in the line style named ``style`` (``line``: its Line2D keywords)."""
        if model not in self.models:
            self.models.append(model)
        self.styles.setdefault(style, line)

    def handles(self, colour: dict) -> list:
        from matplotlib.lines import Line2D

        models = [Line2D([], [], color=colour[m], lw=2.5, label=m) for m in self.models]
        return models + [Line2D([], [], color="0.35", label=style, **line) for style, line in self.styles.items()]


def _handles(axes) -> dict:
    handles = {}
    for ax in np.ravel(axes):  # one legend below the panels, each series once
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    return handles


def _input_table_baselines(ctx: pd.DataFrame) -> dict:
    """(corpus, column) → [(model, value, label)]: each contextual model's input-embedding LID (from layers' rows
    carrying it: ``input_table_lid_*`` columns joined in by :func:`with_input_tables`)."""
    out: dict = {}
    for column in ("lid_euclidean", "lid_cosine"):
        source = f"input_table_{column}"
        if source not in ctx:
            continue
        for (model, corpus), g in ctx.groupby(["model", "corpus"]):
            value = g[source].iloc[0]
            if pd.notna(value):
                out.setdefault((corpus, column), []).append((model, float(value), "input-embedding rows"))
    return out


def with_input_tables(layers: pd.DataFrame, metas: dict[str, dict]) -> pd.DataFrame:
    """The layer rows with each run's input-embedding LID (meta.json) beside them, for the figures."""
    layers = layers.copy()
    for column in ("lid_euclidean", "lid_cosine"):
        layers[f"input_table_{column}"] = [
            (metas[f"{m}/{c}"].get("input_table") or {}).get(column, np.nan)
            for m, c in zip(layers["model"], layers["corpus"])
        ]
    return layers


def kmeans_figure(ctx: pd.DataFrame, colour: dict, out_dir: Path) -> list[Path]:
    """Per model: the best mean silhouette per layer with its spread over the samples (filled band: all points;
    hatched band: without first tokens), all points (solid) and without first tokens (dashed), the 0.1 rule; and the
    silhouette of the symbol/word split."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    plt = pyplot()
    models = sorted(ctx["model"].unique())
    fig, axes = plt.subplots(
        2, len(models), figsize=(max(2.9 * len(models), 6.0), 5.8), squeeze=False, sharey="row", constrained_layout=True
    )
    for j, model in enumerate(models):
        g = ctx[ctx.model == model].sort_values("layer")
        ax = axes[0, j]
        for prefix, style, band in (("", "-o", {"alpha": 0.25}), ("nofirst_", "--s", {"hatch": "////", "alpha": 0.5})):
            mean = g[f"{prefix}cluster_silhouette"].astype(float)
            if mean.notna().any():
                low, high = (g[f"{prefix}cluster_silhouette_{end}"].astype(float) for end in ("low", "high"))
                fill = {"color": colour[model], "lw": 0} if "hatch" not in band else {"facecolor": "none", "lw": 0}
                ax.fill_between(g["layer"], low, high, edgecolor=colour[model], **fill, **band)
                ax.plot(g["layer"], mean, style, ms=3, color=colour[model])
        ax.axhline(0.1, color="k", lw=0.8, ls=":")
        ax.set_title(f"{model}: best K-means silhouette", fontsize=8)
        ax = axes[1, j]
        ax.plot(g["layer"], g["symbol_silhouette"].astype(float), "-o", ms=3, color=colour[model])
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_title(f"{model}: symbols vs words", fontsize=8)
    for ax in axes.ravel():
        ax.set_xlabel("layer", fontsize=8)
        ax.xaxis.get_major_locator().set_params(integer=True)  # layers, not fractions of one
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("silhouette of the chosen K")
    axes[1, 0].set_ylabel("silhouette of the split")
    handles = [
        Line2D([], [], color="0.2", marker="o", ms=3, label="all points: mean of the samples"),
        Patch(color="0.2", alpha=0.25, label="lowest-highest sample"),
        Line2D([], [], color="0.2", ls="--", marker="s", ms=3, label="without first tokens"),
        Patch(facecolor="none", edgecolor="0.2", hatch="////", label="lowest-highest sample, without first tokens"),
        Line2D([], [], color="k", ls=":", label="K = 1 below 0.1 (Cai et al.)"),
    ]
    legend_below(fig, handles)
    suptitle(fig, "K-means per layer (one colour per model) and the symbol/word split")
    return save(fig, out_dir / "layers_kmeans")


def orderings_figure(ctx: pd.DataFrame, colour: dict, out_dir: Path) -> list[Path]:
    """Per layer: the largest |ρ| of PC1-3 with position, and with log frequency, one line per model."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True, constrained_layout=True)
    for ax, what, label in zip(axes, ("position", "log_frequency"), ("position in the sentence", "log frequency")):
        for model, g in ctx.groupby("model"):
            g = g.sort_values("layer")
            best = g[[f"{pc}_rho_{what}" for pc in PCS]].max(axis=1)
            ax.plot(depth(g), best, "-o", ms=3, color=colour[model], label=model)
        ax.set_title(f"largest |ρ| of PC1-3 with {label}", fontsize=9)
        ax.set_xlabel(DEPTH_LABEL)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("|Spearman's ρ|")
    legend_below(fig, list(_handles(axes).values()))
    suptitle(fig, "What the principal components order, per layer")
    return save(fig, out_dir / "layers_orderings")


POSITION_CAP = 40  # positions beyond this share the last colour (long sentences are few)


def has_positions(view: pd.DataFrame) -> bool:
    """Whether a view's points carry their position in the sentence (static vectors: none, or -1)."""
    return "position" in view and view["position"].notna().all() and (view["position"] >= 0).all()


def pca_figure(views: pd.DataFrame, out_dir: Path, name: str, which: str) -> list[Path]:
    """One row per model × corpus, its view layer's PCA (PC1, PC2): K-means clusters; the position in the sentence;
    the same in 3-D; word tokens and symbol tokens apart, coloured by their frequency. Frequencies and positions share
    one colour scale in every row."""
    import matplotlib

    plt = pyplot()
    keys = sorted({(m, c) for m, c in zip(views["model"], views["corpus"])})
    logf = np.log10(views["frequency"].to_numpy(dtype=float))
    fnorm = matplotlib.colors.Normalize(vmin=float(logf.min()), vmax=float(logf.max()))
    pnorm = matplotlib.colors.Normalize(vmin=0, vmax=POSITION_CAP)
    fig = plt.figure(figsize=(17, 3.3 * len(keys) + 0.8), constrained_layout=True)
    cols = 5
    for i, (model, corpus) in enumerate(keys):
        v = views[(views.model == model) & (views.corpus == corpus)]
        layer = int(v["layer"].iloc[0])
        symbol = v["symbol"].to_numpy(dtype=bool) if "symbol" in v else np.zeros(len(v), dtype=bool)
        has_position = has_positions(v)

        def panel(j, title, projection=None, row=i):
            ax = fig.add_subplot(len(keys), cols, cols * row + j, projection=projection)
            ax.set_title(title, fontsize=8)
            ax.set_xlabel("PC1", fontsize=7)
            ax.set_ylabel("PC2", fontsize=7)
            ax.tick_params(labelsize=6)
            return ax

        k = int(v["cluster"].nunique())
        ax = panel(1, f"{model}, layer {layer} ({corpus}):\nK-means, K = {k}" + (" (one cluster)" if k == 1 else ""))
        for c, g in v.groupby("cluster"):
            ax.scatter(g["pc1"], g["pc2"], s=2, color=matplotlib.colormaps["tab20"](int(c) % 20), label=f"cluster {c}")
        if k > 1:
            ax.legend(fontsize=6, markerscale=3, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        if has_position:
            pos = np.minimum(v["position"].to_numpy(), POSITION_CAP)
            ax = panel(2, "by position in the sentence")
            sc = ax.scatter(v["pc1"], v["pc2"], c=pos, cmap="plasma", norm=pnorm, s=2)
            ax = panel(3, "3-D (PC1-3), by position", projection="3d")
            ax.scatter(v["pc1"], v["pc2"], v["pc3"], c=pos, cmap="plasma", norm=pnorm, s=1)
            ax.set_zlabel("PC3", fontsize=7, labelpad=6)
            _sparse_3d_ticks(ax)
            fig.colorbar(sc, ax=ax, label=f"position (≥ {POSITION_CAP} one colour)", shrink=0.8, pad=0.12)
        else:
            for j in (2, 3):
                ax = fig.add_subplot(len(keys), cols, cols * i + j)
                ax.axis("off")
                ax.text(0.5, 0.5, "no positions\n(static vectors)", ha="center", va="center", fontsize=8)
        lf = np.log10(v["frequency"].to_numpy(dtype=float))
        for j, (mask, what) in enumerate(((~symbol, "word tokens"), (symbol, "symbol tokens")), start=4):
            ax = panel(j, f"{what} ({int(mask.sum())}), by frequency")
            ax.scatter(v["pc1"], v["pc2"], s=1, color="0.85")  # every point in grey: the same frame in both panels
            sc = ax.scatter(v["pc1"][mask], v["pc2"][mask], c=lf[mask], cmap="viridis", norm=fnorm, s=2)
        fig.colorbar(sc, ax=ax, label="log10 frequency in the sample", shrink=0.8)
    suptitle(
        fig,
        f"PCA of {which}'s points (≤ 5,000 of the analysed sample): clusters, position, and word vs symbol tokens by "
        "frequency",
    )
    return save(fig, out_dir / name)


def roll_figure(views: pd.DataFrame, out_dir: Path, largest: pd.DataFrame | None = None) -> list[Path]:
    """At the depth where Cai et al. show GPT-2's "Swiss roll" (their layer 2 of 12, scaled to each model): PC1-PC2
    and PC1-3 by position, one row per model × corpus, one position scale; where runs have it, the same for the
    layer's largest K-means cluster alone (the shape of the bulk when a few points lie far out)."""
    import matplotlib

    plt = pyplot()
    largest = views.iloc[0:0] if largest is None else largest
    keys = sorted({(m, c) for m, c in zip(views["model"], views["corpus"])})
    pnorm = matplotlib.colors.Normalize(vmin=0, vmax=POSITION_CAP)
    cols = 4 if len(largest) else 2
    fig = plt.figure(figsize=(4.25 * cols, 3.2 * len(keys) + 0.8), constrained_layout=True)
    for i, (model, corpus) in enumerate(keys):
        v = views[(views.model == model) & (views.corpus == corpus)]
        own = largest[(largest.model == model) & (largest.corpus == corpus)]
        layer = int(v["layer"].iloc[0])
        _roll_panels(fig, (len(keys), cols, cols * i + 1), v, pnorm, f"{model}, layer {layer} ({corpus})")
        if cols == 2:
            continue
        if len(own):
            share = v["cluster"].value_counts(normalize=True).iloc[0]  # both views are capped samples: share by label
            title = f"its largest K-means cluster alone ({share * 100:.0f} % of the points)"
            _roll_panels(fig, (len(keys), cols, cols * i + 3), own, pnorm, title)
        else:
            ax = fig.add_subplot(len(keys), cols, (cols * i + 3, cols * i + 4))
            ax.axis("off")
            one = v["cluster"].nunique() == 1
            ax.text(
                0.5,
                0.5,
                "K = 1 at this layer: the view at left\nis its one cluster"
                if one
                else "no view of the largest cluster\n(a run made before it)",
                ha="center",
                va="center",
                fontsize=8,
            )
    suptitle(fig, 'At the depth of Cai et al.\'s GPT-2 "Swiss roll" (their layer 2 of 12): the points by position')
    return save(fig, out_dir / "layers_roll")


def _sparse_3d_ticks(ax) -> None:
    """A 3-D panel this small fits about four tick labels an axis (more run into each other), and its z label needs
    room inside the panel."""
    from matplotlib.ticker import MaxNLocator

    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(4))
    ax.set_box_aspect(None, zoom=0.8)


def _roll_panels(fig, where: tuple[int, int, int], v: pd.DataFrame, pnorm, title: str) -> None:
    """PC1-PC2 and PC1-3 of one view by position, in the grid cells ``where`` and the next."""
    rows, cols, first = where
    pos = np.minimum(v["position"].to_numpy(), POSITION_CAP)
    ax = fig.add_subplot(rows, cols, first)
    sc = ax.scatter(v["pc1"], v["pc2"], c=pos, cmap="plasma", norm=pnorm, s=2)
    ax.set_title(f"{title}: PC1-PC2", fontsize=8)
    ax.set_xlabel("PC1", fontsize=7)
    ax.set_ylabel("PC2", fontsize=7)
    ax.tick_params(labelsize=6)
    ax = fig.add_subplot(rows, cols, first + 1, projection="3d")
    ax.scatter(v["pc1"], v["pc2"], v["pc3"], c=pos, cmap="plasma", norm=pnorm, s=1)
    ax.set_title("PC1-3", fontsize=8)
    for setter, label in ((ax.set_xlabel, "PC1"), (ax.set_ylabel, "PC2")):
        setter(label, fontsize=7)
    ax.set_zlabel("PC3", fontsize=7, labelpad=6)
    ax.tick_params(labelsize=6)
    _sparse_3d_ticks(ax)
    fig.colorbar(sc, ax=ax, label=f"position (≥ {POSITION_CAP} one colour)", shrink=0.8, pad=0.12)


def outliers_figure(dims: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per model (× corpus): mean |activation| of every dimension (x) in every layer (y), log colour from a hundredth
    of the median dimension's, one scale per model; outlier dimensions are vertical stripes."""
    import matplotlib

    plt = pyplot()
    keys = sorted({(m, c) for m, c in zip(dims["model"], dims["corpus"])})
    fig, axes = plt.subplots(len(keys), 1, figsize=(11, 1.2 + 1.9 * len(keys)), squeeze=False, constrained_layout=True)
    for ax, (model, corpus) in zip(axes[:, 0], keys):
        d = dims[(dims.model == model) & (dims.corpus == corpus)]
        grid = d.pivot(index="layer", columns="dim", values="mean_abs_activation").sort_index()
        values = grid.to_numpy(dtype=float)
        # From a hundredth of the median dimension up: a dimension near 0 (MiniLM's last layer has three) would
        # otherwise stretch the scale over thirty decades; lower values take the lowest colour.
        floor = float(np.median(values)) / 100
        norm = matplotlib.colors.LogNorm(vmin=floor, vmax=float(values.max()), clip=True)
        image = ax.imshow(values, aspect="auto", origin="lower", cmap="magma", norm=norm, interpolation="nearest")
        ax.set_yticks(np.unique(np.linspace(0, len(grid) - 1, min(len(grid), 7)).round().astype(int)))
        ax.set_title(f"{model} ({corpus})", fontsize=8)
        ax.set_ylabel("layer", fontsize=7)
        ax.set_xlabel("dimension", fontsize=7)
        ax.tick_params(labelsize=6)
        fig.colorbar(image, ax=ax, label="mean |activation|", pad=0.01)
    suptitle(fig, "Mean |activation| per dimension and layer (log colour, one scale per model): outlier dimensions")
    return save(fig, out_dir / "layers_outliers")
