"""Tables and figures over layer analyses (the outputs of :func:`isoflow.layers.run_layers`), given by directory.

Tables: ``layers`` (every model × corpus × layer, every metric) and ``layers_lid``, the analogue of Cai et al.'s
Table 3: per model and corpus, the average LID (cosine; Euclidean beside it) over the layers and at the last layer,
contextual models against static vectors; ``layers_clusters`` (what the clusters of every layer with K > 1 hold) and
``layers_views`` (the view layer's principal components against position and frequency). Figures:
``layers_similarity`` (S_inter and S_intra per layer, before and after cluster-centring: their Figures 1-2 and the
centred comparison), ``layers_isoscore`` (IsoScore before and after centring), ``layers_lid`` (LID per layer, their
Figure 9), ``layers_pca`` (2-D and 3-D PCA views of one layer coloured by cluster, by position and by token
frequency: their cluster and "Swiss roll" pictures).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting import write_table
from ..reporting.figures import legend_below, model_colour, pyplot, save, suptitle

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


def load(dirs) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict], pd.DataFrame]:
    """(per-layer table, PCA view points, meta by "model/corpus", what each layer's clusters hold) of the given
    analysis directories."""
    tables, views, metas, clusters = [], [], {}, []
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
        views.append(view)
        metas[f"{meta['model']}/{meta['corpus']}"] = meta
        if (d / "clusters.parquet").is_file():
            clusters.append(pd.read_parquet(d / "clusters.parquet"))
    if not tables:
        raise ValueError("no layer analyses given")
    composition = (
        pd.concat(clusters, ignore_index=True)
        if clusters
        else pd.DataFrame(columns=["model", "corpus", "layer", "cluster"])
    )
    return pd.concat(tables, ignore_index=True), pd.concat(views, ignore_index=True), metas, composition


def lid_table(layers: pd.DataFrame, metas: dict[str, dict]) -> pd.DataFrame:
    rows = []
    for (model, corpus), g in layers.groupby(["model", "corpus"], sort=True):
        meta = metas[f"{model}/{corpus}"]
        last = g.loc[g["layer"].idxmax()]
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
            }
        )
    return pd.DataFrame(rows).sort_values(["kind", "model", "corpus"]).reset_index(drop=True)


def cluster_table(clusters: pd.DataFrame, layers: pd.DataFrame) -> pd.DataFrame:
    """The clusters of every layer where K-means found more than one (K > 1), with what they hold."""
    chosen = layers.loc[layers["cluster_k"] > 1, ["model", "corpus", "layer"]]
    table = clusters.merge(chosen, on=["model", "corpus", "layer"])
    return table.sort_values(["model", "corpus", "layer", "size"], ascending=[True, True, True, False]).reset_index(
        drop=True
    )


PCS = ("pc1", "pc2", "pc3")


def has_positions(view: pd.DataFrame) -> bool:
    """Whether a view's points carry their position in the sentence (static vectors: none, or -1)."""
    return "position" in view and view["position"].notna().all() and (view["position"] >= 0).all()


def view_table(views: pd.DataFrame) -> pd.DataFrame:
    """Per model × corpus, the view layer's principal components against the position in the sentence and the
    type's log frequency: Spearman's ρ over the view's points (the numbers behind the "Swiss roll" and frequency
    pictures of ``layers_pca``). Static vectors have no position: NaN there."""
    rows = []
    for (model, corpus), v in views.groupby(["model", "corpus"], sort=True):
        row = {"model": model, "corpus": corpus, "layer": int(v["layer"].iloc[0]), "points": len(v)}
        for what in ("position", "frequency"):
            ranks = v[what].astype(float).rank() if what == "frequency" or has_positions(v) else None
            for pc in PCS:  # Spearman's rho: Pearson's r of the ranks
                row[f"rho_{what}_{pc}"] = float(v[pc].rank().corr(ranks)) if ranks is not None else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def tables(
    layers: pd.DataFrame,
    metas: dict[str, dict],
    out_dir: str | os.PathLike,
    clusters: pd.DataFrame | None = None,
    views: pd.DataFrame | None = None,
) -> list[Path]:
    out_dir = Path(out_dir)
    cols = [c for c in layers.columns if c != "static"]
    written = write_table(
        layers[cols],
        out_dir / "layers",
        caption=(
            "Per layer (0 = embedding layer; static vectors: one row): S_inter, S_intra, IsoScore and mean cosine, "
            "before "
            "and after subtracting each K-means cluster's mean (K by silhouette, 1 below 0.1), LID (k-NN MLE, "
            "Euclidean and "
            "cosine) and TwoNN (Cai et al. 2021)."
        ),
        floatfmt="%.4f",
    )
    paper = ", ".join(f"{k} {v}" for k, v in CAI_TABLE3.items())
    written += write_table(
        lid_table(layers, metas),
        out_dir / "layers_lid",
        caption=(
            "Table 3 analogue: average LID (cosine) of contextual layers against static vectors, same corpus. "
            f"Cai et al.'s Table 3 (their models, WikiText-2/PTB, all tokens): {paper}."
        ),
        floatfmt="%.2f",
    )
    if clusters is not None:
        written += write_table(
            cluster_table(clusters, layers),
            out_dir / "layers_clusters",
            caption=(
                "What K-means' clusters hold, in every layer where it found more than one (K > 1; the sample of at "
                "most "
                "20,000 points): size, share of the sample, share of symbol tokens (no letter or digit) and of first "
                "tokens "
                "(position 0 in the sentence), mean position, most frequent types (count)."
            ),
            floatfmt="%.3f",
        )
    if views is not None:
        written += write_table(
            view_table(views),
            out_dir / "layers_views",
            caption=(
                "The PCA view's layer (layers_pca): Spearman's rho of each of its first three principal components "
                "with the token's position in the sentence and with its type's frequency (log), over the view's "
                "points; NaN where there are no positions (static vectors)."
            ),
            floatfmt="%.3f",
        )
    return written


def figures(layers: pd.DataFrame, views: pd.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    colour = {m: model_colour(m) for m in layers["model"].unique()}
    corpora = sorted(layers["corpus"].unique())
    ctx, static = layers[~layers["static"]], layers[layers["static"]]
    written = []

    def per_layer(name: str, panels: list[tuple[str, str]], title: str, ylabel: str):
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
        handles = {}
        for ax in axes.flat:  # one legend below the panels, each series once
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        legend_below(fig, list(handles.values()))
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
        "Local intrinsic dimension per layer (k-NN MLE); dotted: static vectors",
        "LID",
    )

    written += pca_figure(views, out_dir)
    return written


POSITION_CAP = 40  # positions beyond this share the last colour (long sentences are few)


def pca_figure(views: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One row per model × corpus, its view layer's PCA (PC1, PC2): K-means clusters; the position in the sentence (the
    "Swiss roll" of Cai et al.'s GPT/GPT-2); the same in 3-D; word tokens and symbol tokens apart, coloured by their
    frequency. Frequencies and positions share one colour scale in every row."""
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
        "PCA of one layer's points (≤ 5,000 of the analysed sample): clusters, position, and word vs symbol tokens by "
        "frequency",
    )
    return save(fig, out_dir / "layers_pca")
