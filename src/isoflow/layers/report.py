"""Tables and figures over layer analyses (the outputs of :func:`isoflow.layers.run_layers`), given by directory.

Tables: ``layers`` (every model × corpus × layer, every measurement); ``layers_summary`` (per model × corpus, the
ranges and counts over its layers that Cai et al.'s claims are judged on); ``layers_lid``, the analogue of Cai et al.'s
Table 3 (per model and corpus the average LID over the layers, against static vectors and against the model's own
input-embedding table); ``layers_kmeans`` (the K decision per layer with its spread over samples, with and without the
sentences' first tokens, and the symbol/word silhouette); ``layers_clusters`` (what the clusters of every layer with
K > 1 hold); ``layers_orderings`` (per layer, principal components 1-3 against position and log frequency);
``layers_outliers`` (outlier dimensions per layer, their share of the mean cosine, the measures without them).

Figures: ``layers_similarity`` (S_inter and S_intra per layer, before and after cluster-centring), ``layers_isoscore``
(IsoScore before and after centring), ``layers_lid`` (LID per layer on a log axis, their Figure 9, with the static
baselines), ``layers_kmeans`` (the best silhouette per layer with its spread, with and without first tokens, and the
symbol/word split), ``layers_orderings`` (|ρ| of the components with position and frequency per layer),
``layers_pca`` (2-D and 3-D views of the middle layer by cluster, position and frequency), ``layers_roll`` (the views
at the depth of Cai et al.'s GPT-2 "Swiss roll", by position) and ``layers_outliers`` (mean |activation| per
dimension and layer, one colour scale per model).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting import write_table
from ..reporting.figures import legend_below, model_colour, pyplot, save, suptitle
from .pca import PCS, ROLL_LARGEST

# Cai et al. (ICLR 2021), Table 3: average LID with cosine distances (their models and corpora; for orientation).
CAI_TABLE3 = {
    "BERT": 5.6,
    "D-BERT": 7.3,
    "GPT": 6.8,
    "GPT2": 7.0,
    "ELMo": 9.1,
    "GloVe": 18.0,
    "GloVe-2M": 26.1,
    "GNEWS": 21.1,
}
SUBSETS = ("all", "no first token")


def load(dirs) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict], pd.DataFrame, dict[str, pd.DataFrame]]:
    """(per-layer table, PCA view points, meta by "model/corpus", what each layer's clusters hold, and the K-means
    silhouettes ``kmeans`` and per-dimension profiles ``dims`` where the runs have them) of the given directories."""
    tables, views, metas, clusters, kmeans, dims = [], [], {}, [], [], []
    for d in map(Path, dirs):
        files = [d / f for f in ("layers.parquet", "pca.parquet", "meta.json")]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise FileNotFoundError(
                f"{d} is not a finished layer analysis (missing {', '.join(missing)}); run `isoflow layers` first"
            )
        meta = json.loads(files[2].read_text(encoding="utf-8"))
        table = pd.read_parquet(files[0])
        table["static"] = bool(meta.get("static", False))
        tables.append(table)
        view = pd.read_parquet(files[1])
        view["model"], view["corpus"] = meta["model"], meta["corpus"]
        if "view" not in view:  # runs made before the roll view: their one view is the middle layer's
            view["view"] = "middle"
        views.append(view)
        metas[f"{meta['model']}/{meta['corpus']}"] = meta
        for name, into in (("clusters", clusters), ("kmeans", kmeans), ("dims", dims)):
            if (d / f"{name}.parquet").is_file():
                into.append(pd.read_parquet(d / f"{name}.parquet"))
    if not tables:
        raise ValueError("no layer analyses given")
    composition = (
        pd.concat(clusters, ignore_index=True)
        if clusters
        else pd.DataFrame(columns=["model", "corpus", "layer", "cluster"])
    )
    if "subset" not in composition:
        composition["subset"] = "all"
    extra = {
        "kmeans": pd.concat(kmeans, ignore_index=True) if kmeans else pd.DataFrame(),
        "dims": pd.concat(dims, ignore_index=True) if dims else pd.DataFrame(),
    }
    return pd.concat(tables, ignore_index=True), pd.concat(views, ignore_index=True), metas, composition, extra


def lid_table(layers: pd.DataFrame, metas: dict[str, dict]) -> pd.DataFrame:
    """Per model × corpus: average LID (cosine, Euclidean) and TwoNN over the layers, at the last layer, and the same
    LID of the model's own input-embedding rows (its static baseline)."""
    rows = []
    for (model, corpus), g in layers.groupby(["model", "corpus"], sort=True):
        meta = metas[f"{model}/{corpus}"]
        last = g.loc[g["layer"].idxmax()]
        table = meta.get("input_table") or {}
        rows.append(
            {
                "kind": "static" if g["static"].iloc[0] else "contextual",
                "model": model,
                "corpus": corpus,
                "points": int(last["n_points"]),
                "dim": int(meta["dim"]),
                "layers": int(len(g)),
                "avg_lid_cosine": g["lid_cosine"].mean(),
                "last_layer_lid_cosine": last["lid_cosine"],
                "avg_lid_euclidean": g["lid_euclidean"].mean(),
                "avg_twonn": g["twonn"].mean(),
                "input_table_types": table.get("n_points", np.nan),
                "input_table_lid_cosine": table.get("lid_cosine", np.nan),
                "input_table_lid_euclidean": table.get("lid_euclidean", np.nan),
            }
        )
    return pd.DataFrame(rows).sort_values(["kind", "model", "corpus"]).reset_index(drop=True)


def _columns(layers: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The named columns (missing ones, from runs made before they existed, empty)."""
    return layers.reindex(columns=["model", "corpus", "layer", *columns])


KMEANS_COLUMNS = [
    f"{prefix}{c}"
    for prefix in ("", "nofirst_")
    for c in (
        "cluster_k",
        "cluster_silhouette",
        "cluster_silhouette_low",
        "cluster_silhouette_high",
        "cluster_k_samples",
        "cluster_settled",
        "cluster_rule_in_spread",
    )
] + ["symbol_silhouette"]
ORDERING_COLUMNS = [f"{pc}_{what}" for pc in PCS for what in ("variance", "rho_position", "rho_log_frequency")]
OUTLIER_COLUMNS = [
    "outlier_count",
    "outlier_dims",
    "peak_ratio",
    "top_cosine_share",
    "removed_cosine_share",
    "cosine_anisotropy",
    "cosine_anisotropy_removed",
    "s_inter",
    "s_inter_removed",
    "isoscore",
    "isoscore_removed",
]


def cluster_table(clusters: pd.DataFrame, layers: pd.DataFrame) -> pd.DataFrame:
    """The clusters of every layer where K-means found more than one (K > 1), with all points and without first
    tokens, with what they hold."""
    frames = []
    for subset, column in (("all", "cluster_k"), ("no first token", "nofirst_cluster_k")):
        if column not in layers:
            continue
        chosen = layers.loc[layers[column] > 1, ["model", "corpus", "layer"]]
        frames.append(clusters[clusters["subset"] == subset].merge(chosen, on=["model", "corpus", "layer"]))
    table = pd.concat(frames, ignore_index=True) if frames else clusters.iloc[0:0]
    order = ["model", "corpus", "layer", "subset", "size"]
    return table.sort_values(order, ascending=[True, True, True, True, False]).reset_index(drop=True)


FIRST_TOKEN_SHARE = 0.9  # a cluster this much made of first tokens is the first-token (attention-sink) split
SMALLEST_CLUSTER = 0.01  # without first tokens, a split whose smallest cluster is below this share isolates outliers


def _count(mask: pd.Series) -> int:
    return int(mask.fillna(False).astype(bool).sum())


def _split_layers(clusters: pd.DataFrame, layers: pd.DataFrame, subset: str, column: str, keep) -> int:
    """How many layers chose K > 1 (``column``) with clusters (of ``subset``) that ``keep`` accepts."""
    if column not in layers or not len(clusters):
        return 0
    chosen = layers.loc[layers[column] > 1, "layer"]
    held = clusters[(clusters["subset"] == subset) & clusters["layer"].isin(chosen)]
    return int(sum(bool(keep(g)) for _, g in held.groupby("layer")))


def summary_table(layers: pd.DataFrame, metas: dict[str, dict], clusters: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model × corpus, the ranges over its layers that Cai et al.'s claims are judged on: S_inter, S_intra,
    IsoScore before and after cluster-centring (and the largest |mean cosine| after it), how many layers chose K > 1
    and the best silhouette there, how many of those splits hold a cluster of first tokens (≥ 90 %), how many layers
    split without first tokens into clusters of at least 1 % of the points each, how many decisions sit within the
    spread of the 0.1 rule, the strongest ordering of a principal component (1-3) by position and by log frequency
    (with its layer), the best symbol/word silhouette, outlier dimensions, and the mean LID against the model's own
    input-embedding rows."""
    clusters = clusters if clusters is not None else pd.DataFrame(columns=["model", "corpus", "layer", "subset"])
    rows = []
    for (model, corpus), g in layers.groupby(["model", "corpus"], sort=True):
        wanted = {*KMEANS_COLUMNS, *ORDERING_COLUMNS, *OUTLIER_COLUMNS, "isoscore_centred", "cosine_anisotropy_centred"}
        g = g.reindex(columns=sorted(set(g.columns) | wanted))  # runs made before a column: it is empty
        mine = clusters[(clusters["model"] == model) & (clusters["corpus"] == corpus)]
        position = g[[f"{pc}_rho_position" for pc in PCS]].abs()
        frequency = g[[f"{pc}_rho_log_frequency" for pc in PCS]].abs()
        split = g["cluster_k"] > 1
        row = {
            "model": model,
            "corpus": corpus,
            "layers": len(g),
            "dim": metas[f"{model}/{corpus}"].get("dim"),
            **{f"{c}_{f}": getattr(g[c], f)() for c in ("s_inter", "s_intra", "isoscore") for f in ("min", "max")},
            "isoscore_centred_min": g["isoscore_centred"].min(),
            "isoscore_centred_max": g["isoscore_centred"].max(),
            "abs_cosine_centred_max": g["cosine_anisotropy_centred"].abs().max(),
            "k_split_layers": _count(split),
            "split_silhouette_max": g.loc[split, "cluster_silhouette"].max(),
            "first_token_split_layers": _split_layers(
                mine, g, "all", "cluster_k", lambda c: (c["share_first_position"] >= FIRST_TOKEN_SHARE).any()
            ),
            "nofirst_split_layers": _count(g["nofirst_cluster_k"] > 1),
            "nofirst_clustered_layers": _split_layers(
                mine, g, "no first token", "nofirst_cluster_k", lambda c: c["share"].min() >= SMALLEST_CLUSTER
            ),
            "rule_in_spread_layers": _count(g["cluster_rule_in_spread"]),
            "position_rho_max": position.max().max(),
            "position_rho_layer": g.loc[position.max(axis=1).idxmax(), "layer"]
            if position.notna().any().any()
            else np.nan,
            "frequency_rho_max": frequency.max().max(),
            "symbol_silhouette_max": g["symbol_silhouette"].max(),
            "outlier_layers": _count(g["outlier_count"] > 0),
            "peak_ratio_max": g["peak_ratio"].max(),
            "lid_cosine_mean": g["lid_cosine"].mean(),
            "input_table_lid_cosine": (metas[f"{model}/{corpus}"].get("input_table") or {}).get("lid_cosine", np.nan),
        }
        rows.append(row)
    return pd.DataFrame(rows)


def tables(
    layers: pd.DataFrame,
    metas: dict[str, dict],
    out_dir: str | os.PathLike,
    clusters: pd.DataFrame | None = None,
) -> list[Path]:
    out_dir = Path(out_dir)
    cols = [c for c in layers.columns if c != "static"]
    written = write_table(
        layers[cols],
        out_dir / "layers",
        caption=(
            "Per layer (0 = embedding layer; static vectors: one row): every measurement of isoflow.layers.measure "
            "(S_inter, S_intra, IsoScore and mean cosine before and after subtracting each K-means cluster's mean; "
            "the K decision and its spread; principal components against position and frequency; outlier "
            "dimensions; LID and TwoNN), Cai et al. 2021."
        ),
        floatfmt="%.4f",
    )
    paper = ", ".join(f"{k} {v}" for k, v in CAI_TABLE3.items())
    written += write_table(
        lid_table(layers, metas),
        out_dir / "layers_lid",
        caption=(
            "Table 3 analogue: average LID (k-NN MLE, cosine) of contextual layers against static vectors of the "
            "same corpus and against each model's own input-embedding rows of the analysed types. Cai et al.'s "
            f"Table 3 (their models, WikiText-2/PTB, all tokens): {paper}."
        ),
        floatfmt="%.2f",
    )
    written += write_table(
        summary_table(layers, metas, clusters),
        out_dir / "layers_summary",
        caption=(
            "Per model and corpus, over its layers: the ranges of S_inter, S_intra, IsoScore and IsoScore after "
            "subtracting each K-means cluster's mean, and the largest |mean cosine| after it; K > 1: how many layers "
            "chose it and their best silhouette, how many of those splits hold a cluster of at least "
            f"{FIRST_TOKEN_SHARE * 100:.0f} % first tokens, how many layers split without first tokens and, of "
            f"those, how many into clusters of at least {SMALLEST_CLUSTER * 100:.0f} % of the points each (not a few "
            "outliers), how many decisions sit within the spread of the 0.1 rule; the largest |Spearman's rho| of "
            "principal components 1-3 with position (and its layer) and with log frequency; the best symbol/word "
            "silhouette; layers with outlier dimensions and the largest peak ratio; mean cosine LID against the "
            "model's own input-embedding rows."
        ),
        floatfmt="%.4f",
    )
    written += write_table(
        _columns(layers, KMEANS_COLUMNS),
        out_dir / "layers_kmeans",
        caption=(
            "The K decision per layer: K-means K = 2..15, the best inertia of several k-means++ starts, on several "
            "samples; K* = the best mean silhouette over the samples, K = 1 below 0.1; the lowest and highest "
            "silhouette of K* over the samples, each sample's own decision, whether all agree (settled) and whether "
            "0.1 lies within the spread; nofirst_: the same without every sentence's first token; symbol_silhouette: "
            "the silhouette of the split symbol tokens / word tokens (first sample)."
        ),
        floatfmt="%.4f",
    )
    if clusters is not None:
        written += write_table(
            cluster_table(clusters, layers),
            out_dir / "layers_clusters",
            caption=(
                "What K-means' clusters hold, in every layer where it chose K > 1 (the first sample of at most 20,000 "
                "points; subset: all points, or without first tokens): size, share of the sample, share of symbol "
                "tokens (no letter or digit) and of first tokens (position 0 in the sentence), mean position, most "
                "frequent types (count)."
            ),
            floatfmt="%.3f",
        )
    written += write_table(
        _columns(layers, ORDERING_COLUMNS),
        out_dir / "layers_orderings",
        caption=(
            "Per layer, principal components 1-3 of the first sample (≤ 20,000 points): share of the variance, and "
            "|Spearman's rho| of the points' coordinates with their position in the sentence and with their type's "
            "log frequency (a component's sign is arbitrary); NaN without positions (static vectors). An ordering "
            "is not a roll: see layers_roll for the shape."
        ),
        floatfmt="%.3f",
    )
    written += write_table(
        _columns(layers, OUTLIER_COLUMNS),
        out_dir / "layers_outliers",
        caption=(
            "Outlier dimensions per layer: how many have a mean |activation| of at least 5 times the median "
            "dimension's (the five largest by index), max/median of the mean |activation| (peak ratio), the share "
            "of the mean cosine carried by the dimension that carries most and by the 3 largest dimensions, and "
            "the mean cosine, S_inter and IsoScore with and without those 3."
        ),
        floatfmt="%.4f",
    )
    return written


# Models of 5 to 31 states share a panel: each is drawn over its relative depth, so that its first and last layers
# line up with the others' (the tables keep the layer index).
DEPTH_LABEL = "depth: layer / last layer (0 = the embeddings)"


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

    def per_layer(name, panels, title, ylabel, *, log=False, dashed="_centred", baselines=None):
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
                    g = g.sort_values("layer")
                    ax.plot(depth(g), g[col], "-o", ms=3, color=colour[model], label=f"{model}")
                    other = f"{col}{dashed}"
                    if dashed and other in g and g[other].notna().any():
                        ax.plot(depth(g), g[other], "--", color=colour[model], label=f"{model}, {DASHED[dashed]}")
                for model, g in static[static.corpus == corpus].groupby("model"):
                    if col in g and g[col].notna().any():
                        ax.axhline(g[col].iloc[0], ls=":", color=colour[model], label=f"{model} (static)")
                for model, value, what in (baselines or {}).get((corpus, col), []):
                    ax.axhline(value, ls=(0, (1, 3)), lw=1.2, color=colour[model], label=f"{model}, {what}")
                ax.set_title(f"{label} — {corpus}", fontsize=9)
                ax.set_xlabel(DEPTH_LABEL)
                ax.set_ylabel(ylabel if len(panels) == 1 else label)
                if log:
                    _plain_log_axis(ax)
                ax.grid(alpha=0.3, which="both" if log else "major")
        legend_below(fig, list(_handles(axes).values()))
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
        log=True,
        baselines=_input_table_baselines(ctx),
    )
    # Every figure is written (the workflow declares them): one without data says so.
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
    return written


NO_RUNS = "no contextual model's run with these measurements among the analyses given"


def _empty(out_dir: Path, name: str, text: str) -> list[Path]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9)
    return save(fig, out_dir / name)


DASHED = {"_centred": "cluster-centred", "": ""}


def _plain_log_axis(ax) -> None:
    """A logarithmic y axis labelled 5, 10, 20, 50, … rather than 5×10⁰."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


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
        ax.set_xlabel("layer", fontsize=8)
        ax.grid(alpha=0.3)
        ax = axes[1, j]
        ax.plot(g["layer"], g["symbol_silhouette"].astype(float), "-o", ms=3, color=colour[model])
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_title(f"{model}: symbols vs words", fontsize=8)
        ax.set_xlabel("layer", fontsize=8)
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
            ax.set_box_aspect(None, zoom=0.8)  # room for the z label inside the panel
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
    ax.set_box_aspect(None, zoom=0.8)
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
