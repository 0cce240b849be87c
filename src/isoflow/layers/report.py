"""Tables over layer analyses (the outputs of :func:`isoflow.layers.run_layers`), given by directory.

Tables: ``layers`` (every model × corpus × layer, every measurement); ``layers_summary`` (per model × corpus, the
ranges and counts over its layers that Cai et al.'s claims are judged on); ``layers_lid``, the analogue of Cai et al.'s
Table 3 (per model and corpus the average LID over the layers, against static vectors and against the model's own
input-embedding table); ``layers_kmeans`` (the K decision per layer with its spread over samples, with and without the
sentences' first tokens, and the symbol/word silhouette); ``layers_clusters`` (what the clusters of every layer with
K > 1 hold); ``layers_orderings`` (per layer, principal components 1-3 against position and log frequency);
``layers_outliers`` (outlier dimensions per layer, their share of the mean cosine, the measures without them).

Figures: :mod:`isoflow.layers.figures`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting import write_table
from . import CKA_COLUMNS, CROSS_COLUMNS, PCS, TYPE_RUNGS_FROM, TYPES_COLUMNS
from .compare import matched_table

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


def load(dirs) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict], pd.DataFrame, dict[str, pd.DataFrame]]:
    """(per-layer table, PCA view points, meta by "model/corpus", what each layer's clusters hold, and the K-means
    silhouettes ``kmeans``, per-dimension profiles ``dims``, S_inter curves ``types`` and layer-by-layer CKA ``cka``
    where the runs have them, and CKA between two models' layers ``cross``) of the given directories: layer analyses
    and comparisons of two models (:func:`isoflow.layers.cross.run_cross`, a folder with ``cross.json``)."""
    tables, views, metas, clusters, kmeans, dims, types, cka, cross = [], [], {}, [], [], [], [], [], []
    for d in map(Path, dirs):
        if (d / "cross.json").is_file() and (d / "cross.parquet").is_file():
            cross.append(pd.read_parquet(d / "cross.parquet"))
            continue
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
        for name, into in (("clusters", clusters), ("kmeans", kmeans), ("dims", dims), ("types", types), ("cka", cka)):
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
        "types": _concat(types, ["model", "corpus", *TYPES_COLUMNS]),
        "cka": _concat(cka, ["model", "corpus", *CKA_COLUMNS]),
        "cross": _concat(cross, ["model_a", "model_b", "corpus", *CROSS_COLUMNS]),
    }
    return pd.concat(tables, ignore_index=True), pd.concat(views, ignore_index=True), metas, composition, extra


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    found = [f for f in frames if len(f)]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=columns)


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
    extra: dict[str, pd.DataFrame] | None = None,
) -> list[Path]:
    out_dir = Path(out_dir)
    extra = extra or {}
    curve = extra.get("types", pd.DataFrame(columns=["model", "corpus", *TYPES_COLUMNS]))
    cka = extra.get("cka", pd.DataFrame(columns=["model", "corpus", *CKA_COLUMNS]))
    cross = extra.get("cross", pd.DataFrame(columns=["model_a", "model_b", "corpus", *CROSS_COLUMNS]))
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
    written += write_table(
        curve.sort_values(["model", "corpus", "layer", "n_types"], ignore_index=True),
        out_dir / "layers_types",
        caption=(
            "S_inter, and S_inter after subtracting each K-means cluster's mean, over each model's n most frequent "
            f"types of the analysed sample, n = {TYPE_RUNGS_FROM}, {2 * TYPE_RUNGS_FROM}, {4 * TYPE_RUNGS_FROM}, "
            "... (doubling) and all its types, per layer: S_inter moves, up or down by model, with the rarer types "
            "a sample takes in. Centred S_inter is empty at an n its points do not reach: a point equal to its "
            "cluster's mean is left out, and where a cluster holds one type's copies (a static layer 0) that type "
            "leaves with it."
        ),
        floatfmt="%.4f",
    )
    written += write_table(
        matched_table(curve),
        out_dir / "layers_matched",
        caption=(
            "S_inter and centred S_inter per layer over all of a model's types (n_types) and over its matched_types "
            "most frequent ones: the largest of n = 125 x 2^k that every model of the corpus reaches, so that models "
            "compare on equal terms (isoflow.layers.compare); centred S_inter over all types is empty where "
            "layers_types' is (its caption says why)."
        ),
        floatfmt="%.4f",
    )
    written += write_table(
        cka.sort_values(["model", "corpus", "subset", "layer_a", "layer_b"], ignore_index=True),
        out_dir / "layers_cka",
        caption=(
            "Linear CKA (Kornblith et al. 2019), biased and debiased (Song et al. 2012's unbiased HSIC), between every "
            "pair of a model's layers, on one seeded sample of n_points points (the same in every layer), and on such "
            "a sample of the points past each sentence's first position (subset)."
        ),
        floatfmt="%.4f",
    )
    written += write_table(
        cross.sort_values(["model_a", "model_b", "corpus", "subset", "layer_a", "layer_b"], ignore_index=True),
        out_dir / "layers_cross",
        caption=(
            "Linear CKA, biased and debiased, between every layer of model_a and every layer of model_b on the same "
            "n_words words (whole sentences in a seeded order; a word's state in a model is the mean of its pieces' "
            "states), and on the words past each sentence's first (subset; isoflow.layers.cross)."
        ),
        floatfmt="%.4f",
    )
    return written
