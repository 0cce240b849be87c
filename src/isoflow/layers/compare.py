"""Comparisons on equal terms across a layer analysis' models: S_inter at a matched number of types, and each model's
layer-by-layer CKA (its block structure), and CKA between two models' layers on the same words, as tables and figures
(what :func:`isoflow.layers.report.tables` and :func:`isoflow.layers.figures.figures` add from ``types.parquet``,
``cka.parquet`` and ``cross.parquet``).

S_inter moves with the rarer types a sample takes in (up or down, by model and layer), and the models' tokenisers cut
one corpus sample into 6.7k–15k types, so S_inter over each model's own types does not compare across models. The rule
here: each model's S_inter over its n most frequent types (:func:`isoflow.metrics.s_inter_by_type_count`), n the largest
rung of :func:`isoflow.layers.measure.type_rungs` (125, 250, 500, ... doubling) that every model of the corpus reaches.
Runs made before these files existed have neither: the tables are then empty and the figures say so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting.figures import pyplot, save, suptitle
from . import TYPE_RUNGS_FROM

MATCHED_COLUMNS = [
    "model",
    "corpus",
    "layer",
    "n_types",
    "s_inter",
    "s_inter_centred",
    "matched_types",
    "s_inter_matched",
    "s_inter_centred_matched",
]


def matched_types(curve: pd.DataFrame) -> dict[str, int]:
    """Per corpus, the largest rung (125·2^k) that every model's S_inter curve reaches: its fewest types, rounded down
    to a rung (none when a model has fewer than 125 types)."""
    out = {}
    for corpus, g in curve.groupby("corpus"):
        fewest = int(g.groupby("model")["n_types"].max().min())
        if fewest >= TYPE_RUNGS_FROM:
            out[corpus] = TYPE_RUNGS_FROM * 2 ** int(np.floor(np.log2(fewest / TYPE_RUNGS_FROM)))
    return out


def matched_table(curve: pd.DataFrame) -> pd.DataFrame:
    """Per model, corpus and layer: S_inter and centred S_inter over all its types (how many) and over the corpus'
    matched number of types (:func:`matched_types`)."""
    if curve.empty:
        return pd.DataFrame(columns=MATCHED_COLUMNS)
    matched = matched_types(curve)
    keys = ["model", "corpus", "layer"]
    every = curve.loc[curve.groupby(keys)["n_types"].idxmax(), [*keys, "n_types", "s_inter", "s_inter_centred"]]
    at = curve[curve["n_types"] == curve["corpus"].map(matched)]
    at = at.rename(
        columns={"n_types": "matched_types", "s_inter": "s_inter_matched", "s_inter_centred": "s_inter_centred_matched"}
    )
    table = every.merge(at, on=keys, how="left")
    return table[MATCHED_COLUMNS].sort_values(keys, ignore_index=True)


def types_figure(curve: pd.DataFrame, out_dir: Path) -> list[Path]:
    """:func:`draw_types` saved as ``layers_types``."""
    return save(draw_types(curve), out_dir / "layers_types")


# A layer's place in its model, as the per-layer figures draw it (isoflow.layers.figures) and as this module colours it.
DEPTH_LABEL = "depth: layer / last layer (0 = the embeddings)"


def draw_types(curve: pd.DataFrame):
    """One row per model (× corpus), S_inter and centred S_inter against the number of most frequent types (log axis),
    one line per layer coloured by depth (a colour bar names every layer's colour; the first and last layers are also
    in each panel's key), the matched number of types marked; one x scale and one y scale for every panel, so that
    models compare where they reach the same number of types."""
    import matplotlib

    plt = pyplot()
    keys = sorted({(m, c) for m, c in zip(curve["model"], curve["corpus"])})
    matched = matched_types(curve)
    fig, axes = plt.subplots(
        len(keys),
        2,
        figsize=(9.5, 1.0 + 2.4 * len(keys)),
        squeeze=False,
        sharex=True,
        sharey=True,
        layout="constrained",
    )
    cmap = matplotlib.colormaps["viridis"]
    for row, (model, corpus) in zip(axes, keys):
        g = curve[(curve.model == model) & (curve.corpus == corpus)]
        last = max(int(g["layer"].max()), 1)
        for ax, column, what in zip(row, ("s_inter", "s_inter_centred"), ("S_inter", "S_inter, cluster-centred")):
            for layer, h in g.groupby("layer"):
                h = h.sort_values("n_types")
                edge = layer in (0, int(g["layer"].max()))
                label = f"layer {layer}" + (" (first)" if layer == 0 else " (last)") if edge else None
                ax.plot(
                    h["n_types"],
                    h[column],
                    "-o" if edge else "-",
                    ms=3,
                    lw=1.6 if edge else 0.8,
                    color=cmap(layer / last),
                    label=label,
                )
            if corpus in matched:
                ax.axvline(matched[corpus], color="0.4", ls=":", lw=1, label=f"matched: {matched[corpus]} types")
            ax.set_xscale("log", base=2)
            ax.set_title(f"{what} — {model} ({corpus})", fontsize=8)
            ax.set_xlabel("the n most frequent types", fontsize=7)
            ax.tick_params(labelsize=6, labelbottom=True)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6, loc="best")
        row[0].set_ylabel("mean cosine between types", fontsize=7)
    bar = fig.colorbar(
        matplotlib.cm.ScalarMappable(norm=matplotlib.colors.Normalize(0, 1), cmap=cmap), ax=axes, shrink=0.6, aspect=40
    )
    bar.set_label(DEPTH_LABEL, fontsize=7)
    bar.ax.tick_params(labelsize=6)
    suptitle(fig, "S_inter against the number of types it is measured over (one line per layer, colour: depth)")
    return fig


def cka_figure(cka: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per model (× corpus), debiased linear CKA between every pair of layers, on all sampled points and without the
    sentences' first positions; one colour scale, 0 to 1, for every panel (a debiased value below 0 takes 0's
    colour)."""
    keys = sorted({(m, c) for m, c in zip(cka["model"], cka["corpus"])})
    panels = [
        (f"{m} ({c})", cka[(cka.model == m) & (cka.corpus == c)], "layer", "layer", "n_points", "points")
        for m, c in keys
    ]
    title = "Linear CKA between every pair of a model's layers (debiased; one colour scale, 0 to 1)"
    return _heatmaps(panels, ("all", "no first token"), title, out_dir / "layers_cka")


def cross_figure(cross: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Per pair of models (× corpus), debiased linear CKA between every layer of one and every layer of the other on
    the same words, on all of them and without each sentence's first word; one colour scale, 0 to 1."""
    keys = sorted({k for k in zip(cross["model_a"], cross["model_b"], cross["corpus"])})
    panels = [
        (
            f"{a} × {b} ({c})",
            cross[(cross.model_a == a) & (cross.model_b == b) & (cross.corpus == c)],
            f"{b}: layer",
            f"{a}: layer",
            "n_words",
            "words",
        )
        for a, b, c in keys
    ]
    title = "Linear CKA between two models' layers on the same words (debiased; one colour scale, 0 to 1)"
    return _heatmaps(panels, ("all", "no first word"), title, out_dir / "layers_cross")


def _heatmaps(panels, subsets, title: str, path: Path) -> list[Path]:
    """:func:`draw_heatmaps`, saved as ``path`` .png and .pdf."""
    return save(draw_heatmaps(panels, subsets, title), path)


def draw_heatmaps(panels, subsets, title: str):
    """One row of heatmaps (layer_a up, layer_b across; debiased CKA) per panel ``(name, rows, x label, y label, count
    column, count word)``, one column per subset present; one colour scale, 0 to 1, and one colour bar. Every panel
    has the same box, its cells stretched to fill it: square cells would squash a 5-layer × 31-layer comparison into a
    strip."""
    from matplotlib.ticker import MaxNLocator

    plt = pyplot()
    present = set().union(*(set(rows["subset"]) for _, rows, *_ in panels)) if panels else set()
    subsets = [s for s in subsets if s in present]
    fig, axes = plt.subplots(
        len(panels),
        len(subsets),
        figsize=(4.2 * len(subsets) + 0.8, 0.6 + 3.6 * len(panels)),
        squeeze=False,
        constrained_layout=True,
    )
    image = None
    for row, (name, rows, xlabel, ylabel, count, word) in zip(axes, panels):
        for ax, subset in zip(row, subsets):
            d = rows[rows.subset == subset]
            if d.empty:
                ax.axis("off")
                continue
            grid = d.pivot(index="layer_a", columns="layer_b", values="cka_debiased").sort_index()
            image = ax.imshow(
                grid.to_numpy(dtype=float),
                origin="lower",
                cmap="viridis",
                vmin=0.0,
                vmax=1.0,
                interpolation="nearest",
                aspect="auto",
            )
            ax.set_title(f"{name}: {subset}, {int(d[count].iloc[0])} {word}", fontsize=8)
            ax.set_xlabel(xlabel, fontsize=7)
            ax.set_ylabel(ylabel, fontsize=7)
            ax.tick_params(labelsize=6)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers are whole numbers
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if image is not None:
        fig.colorbar(image, ax=axes, label="linear CKA (debiased)", shrink=0.8)
    suptitle(fig, title)
    return fig
