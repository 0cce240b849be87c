"""Tables and figures over layer analyses (the outputs of :func:`isoflow.layers.run_layers`), given by directory.

Tables: ``layers`` (every model × corpus × layer, every metric) and ``layers_lid``, the analogue of Cai et al.'s
Table 3: per model and corpus, the average LID (cosine; Euclidean beside it) over the layers and at the last layer,
contextual models against static vectors. Figures: ``layers_similarity`` (S_inter and S_intra per layer, before and
after cluster-centring: their Figures 1-2 and the centred comparison), ``layers_isoscore`` (IsoScore before and
after centring), ``layers_lid`` (LID per layer, their Figure 9), ``layers_pca`` (2-D and 3-D PCA views of one layer
coloured by cluster and by token frequency: their cluster and "Swiss roll" pictures).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting import write_table
from ..reporting.figures import pyplot, save, suptitle

# Cai et al. (ICLR 2021), Table 3: average LID with cosine distances (their models and corpora; for orientation).
CAI_TABLE3 = {"BERT": 5.6, "D-BERT": 7.3, "GPT": 6.8, "GPT2": 7.0, "ELMo": 9.1, "GloVe": 18.0, "GloVe-2M": 26.1, "GNEWS": 21.1}


def load(dirs) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict]]:
    """(per-layer table, PCA view points, meta by "model/corpus") of the given analysis directories."""
    tables, views, metas = [], [], {}
    for d in map(Path, dirs):
        files = [d / f for f in ("layers.parquet", "pca.parquet", "meta.json")]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise FileNotFoundError(f"{d} is not a finished layer analysis (missing {', '.join(missing)}); run `isoflow layers` first")
        meta = json.loads(files[2].read_text(encoding="utf-8"))
        table = pd.read_parquet(files[0])
        table["static"] = bool(meta.get("static", False))
        tables.append(table)
        view = pd.read_parquet(files[1])
        view["model"], view["corpus"] = meta["model"], meta["corpus"]
        views.append(view)
        metas[f"{meta['model']}/{meta['corpus']}"] = meta
    if not tables:
        raise ValueError("no layer analyses given")
    return pd.concat(tables, ignore_index=True), pd.concat(views, ignore_index=True), metas


def lid_table(layers: pd.DataFrame, metas: dict[str, dict]) -> pd.DataFrame:
    rows = []
    for (model, corpus), g in layers.groupby(["model", "corpus"], sort=True):
        meta = metas[f"{model}/{corpus}"]
        last = g.loc[g["layer"].idxmax()]
        rows.append({"kind": "static" if g["static"].iloc[0] else "contextual", "model": model, "corpus": corpus,
                     "points": int(last["n_points"]), "dim": int(meta["dim"]), "layers": int(len(g)),
                     "avg_lid_cosine": g["lid_cosine"].mean(), "last_layer_lid_cosine": last["lid_cosine"],
                     "avg_lid_euclidean": g["lid_euclidean"].mean(), "avg_twonn": g["twonn"].mean()})
    return pd.DataFrame(rows).sort_values(["kind", "model", "corpus"]).reset_index(drop=True)


def tables(layers: pd.DataFrame, metas: dict[str, dict], out_dir: str | os.PathLike) -> list[Path]:
    out_dir = Path(out_dir)
    cols = [c for c in layers.columns if c != "static"]
    written = write_table(layers[cols], out_dir / "layers", caption=(
        "Per layer (0 = embedding layer; static vectors: one row): S_inter, S_intra, IsoScore and mean cosine, before "
        "and after subtracting each K-means cluster's mean (K by silhouette, 1 below 0.1), LID (k-NN MLE, Euclidean and "
        "cosine) and TwoNN (Cai et al. 2021)."), floatfmt="%.4f")
    paper = ", ".join(f"{k} {v}" for k, v in CAI_TABLE3.items())
    written += write_table(lid_table(layers, metas), out_dir / "layers_lid", caption=(
        "Table 3 analogue: average LID (cosine) of contextual layers against static vectors, same corpus. "
        f"Cai et al.'s Table 3 (their models, WikiText-2/PTB, all tokens): {paper}."), floatfmt="%.2f")
    return written


def _styles(layers: pd.DataFrame):
    models = sorted(layers["model"].unique())
    return {m: f"C{i}" for i, m in enumerate(models)}


def figures(layers: pd.DataFrame, views: pd.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    colour = _styles(layers)
    corpora = sorted(layers["corpus"].unique())
    ctx, static = layers[~layers["static"]], layers[layers["static"]]
    written = []

    def per_layer(name: str, panels: list[tuple[str, str]], title: str, ylabel: str):
        fig, axes = plt.subplots(len(panels), len(corpora), figsize=(max(4.2 * len(corpora), 6.0), 3.0 * len(panels)),
                                 squeeze=False, constrained_layout=True)
        for j, corpus in enumerate(corpora):
            for i, (col, label) in enumerate(panels):
                ax = axes[i, j]
                for model, g in ctx[ctx.corpus == corpus].groupby("model"):
                    g = g.sort_values("layer")
                    ax.plot(g["layer"], g[col], "-o", ms=3, color=colour[model], label=f"{model}")
                    centred = f"{col}_centred"
                    if centred in g and g[centred].notna().any():
                        ax.plot(g["layer"], g[centred], "--", color=colour[model], label=f"{model}, cluster-centred")
                for model, g in static[static.corpus == corpus].groupby("model"):
                    if g[col].notna().any():
                        ax.axhline(g[col].iloc[0], ls=":", color=colour[model], label=f"{model} (static)")
                ax.set_title(f"{label} — {corpus}", fontsize=9)
                ax.set_xlabel("layer (0 = embeddings)")
                ax.set_ylabel(ylabel if len(panels) == 1 else label)
                ax.grid(alpha=0.3)
                ax.legend(fontsize=6)
        suptitle(fig, title)
        return save(fig, out_dir / name)

    written += per_layer("layers_similarity", [("s_inter", "S_inter"), ("s_intra", "S_intra")],
                         "Inter- and intra-type cosine per layer; dashed: after subtracting each cluster's mean", "cosine")
    written += per_layer("layers_isoscore", [("isoscore", "IsoScore")], "IsoScore per layer; dashed: cluster-centred", "IsoScore")
    written += per_layer("layers_lid", [("lid_euclidean", "LID (Euclidean)"), ("lid_cosine", "LID (cosine)")],
                         "Local intrinsic dimension per layer (k-NN MLE); dotted: static vectors", "LID")

    # PCA views: one row per model x corpus; 2-D by cluster, 2-D by frequency, 3-D by frequency.
    keys = sorted({(m, c) for m, c in zip(views["model"], views["corpus"])})
    fig = plt.figure(figsize=(13, 3.8 * len(keys)), constrained_layout=True)
    for i, (model, corpus) in enumerate(keys):
        v = views[(views.model == model) & (views.corpus == corpus)]
        layer = int(v["layer"].iloc[0])
        logf = np.log10(v["frequency"].to_numpy(dtype=float))
        ax = fig.add_subplot(len(keys), 3, 3 * i + 1)
        ax.scatter(v["pc1"], v["pc2"], c=v["cluster"], cmap="tab20", s=3)
        ax.set_title(f"{model} layer {layer} ({corpus}): K-means clusters", fontsize=8)
        ax = fig.add_subplot(len(keys), 3, 3 * i + 2)
        sc = ax.scatter(v["pc1"], v["pc2"], c=logf, cmap="viridis", s=3)
        fig.colorbar(sc, ax=ax, label="log10 frequency")
        ax.set_title("coloured by token frequency", fontsize=8)
        ax = fig.add_subplot(len(keys), 3, 3 * i + 3, projection="3d")
        ax.scatter(v["pc1"], v["pc2"], v["pc3"], c=logf, cmap="viridis", s=2)
        ax.set_title("3-D view (PC1-3)", fontsize=8)
    suptitle(fig, "PCA of one layer's points (≤ 5,000 of the analysed sample)")
    written += save(fig, out_dir / "layers_pca")
    return written
