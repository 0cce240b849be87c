"""The fine-tuning sweep's tables and figures, from its run records.

Tables: ``finetune`` — per task × model × regulariser × weight, after the last epoch, mean and std over the seeds
that did not diverge (which are counted): the held-out metric (MCC for CoLA, F1 for MRPC, else accuracy) and
accuracy; IsoScore*, IsoScore and mean cosine of the regulariser's points; IsoScore, mean cosine, silhouette, TwoNN,
LID and the activation peak ratio (:func:`isoflow.metrics.peak_ratio`) of the pooled outputs. ``finetune_paired`` —
every weight against the plain run (λ = 0) of the same seed: the mean paired difference of the held-out metric,
IsoScore*, TwoNN and the silhouette, with a 95 % t-interval over seeds.

Figures (the I-STAR poster's): ``finetune_activations`` (mean |activation| per dimension of the held-out pooled
outputs: Figure 1), ``finetune_performance`` (held-out metric against IsoScore*, one point per λ: Figure 5),
``finetune_baselines`` (every regulariser's paired difference in the held-out metric against plain fine-tuning,
per task, with its interval: the comparison of Figure 6), ``finetune_twonn`` (TwoNN against λ: Figure 7),
``finetune_silhouette_vs_isoscore`` (silhouette against IsoScore of the pooled outputs across epochs, one curve per λ)
and ``finetune_epochs`` (the held-out metric after every epoch, one curve per regulariser and weight: is training still
improving it?). Runs measured per layer (``layer_geometry``) add the table and figure ``finetune_layers``: every layer's
IsoScore, S_inter and TwoNN before and after fine-tuning, with the change's interval; and ``finetune_layers_epochs``:
every layer after every epoch (does a change in the top layers reach the bottom ones as training goes on?)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics.outliers import peak_ratio
from ..records import load_runs
from ..reporting import diverged, lambda_summary, write_table
from ..reporting.figures import (
    COSREG_COLOUR,
    grid,
    lambda_colour,
    lambda_colours,
    lambda_curves_figure,
    lambda_legend,
    lambda_points_figure,
    legend_below,
    panels,
    save,
    suptitle,
)
from ..reporting.sweeps import finals

FINAL = (
    "metric",
    "accuracy",
    "isoscore_star",
    "isoscore_points",
    "cosine_points",
    "isoscore",
    "cosine_anisotropy",
    "silhouette",
    "twonn",
    "lid_mle",
    "activation_peak_ratio",
)
KEY = ("task", "model", "reg", "istar_lambda", "cosreg_weight")
PAIRED = ("metric", "isoscore_star", "twonn", "silhouette")  # the poster's claims: performance, isotropy, ID, clusters
# Measured on the regulariser's points: a run is paired with the plain run only where both used the same points (CosReg
# on the last layer's token states against λ = 0's every layer would compare two point sets)
ON_POINTS = ("isoscore_star",)


def _complete(epochs: pd.DataFrame, info: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Records made before CosReg existed hold no ``reg``/``cosreg_weight``: they are I-STAR runs. The activation peak
    ratio is derived from each epoch's per-dimension mean |activation|."""
    for frame in (epochs, info):
        if "reg" not in frame:
            frame["reg"] = "istar"
        if "cosreg_weight" not in frame:
            frame["cosreg_weight"] = 0.0
    if "mean_abs_activation" in epochs and "activation_peak_ratio" not in epochs:
        # a profile is its own one-row point set
        epochs["activation_peak_ratio"] = [peak_ratio(np.asarray(a)[None, :]) for a in epochs["mean_abs_activation"]]
    return epochs, info


def _rows(frame: pd.DataFrame, **columns) -> pd.DataFrame:
    """The rows of ``frame`` whose every named column equals the given value."""
    keep = np.ones(len(frame), dtype=bool)
    for column, value in columns.items():
        keep &= (frame[column] == value).to_numpy()
    return frame[keep]


def summary(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """One row per task × model × regulariser × weight, with the name of the task's metric."""
    epochs, info = _complete(epochs, info)
    columns = [c for c in FINAL if c in epochs]
    table = lambda_summary(epochs, info, order="epoch", length="epochs", columns=columns, key=KEY)
    last = finals(epochs, info, "epoch", KEY)
    names = []
    for _, row in table.iterrows():
        config = {"reg": row.reg, "istar_lambda": row["lambda"], "cosreg_weight": row.cosreg_weight}
        match = _rows(last, task=row.task, model=row.model, **config)
        names.append(next(iter(match["metric_name"]), ""))
    table.insert(table.columns.get_loc("epochs") + 1, "metric_name", names)
    return table


def paired(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Each weight against the plain run (λ = 0) of the same task, model and seed, after the last epoch: the mean
    paired difference, its std over seeds and a 95 % t-interval (NaN with fewer than 2 seeds). IsoScore* is paired
    only where both runs measured it on the same points (``ON_POINTS``; else NaN)."""
    from scipy.stats import t as student

    epochs, info = _complete(epochs, info)
    last = finals(epochs, info, "epoch", KEY)
    run = [*KEY, "seed"]
    last = last.merge(info[[*run, "points"]], on=run)
    plain = _rows(last, istar_lambda=0, cosreg_weight=0)
    rows = []
    for (task, model, reg, lam, w), runs in last.groupby(list(KEY), sort=True):
        if lam == 0 and w == 0:
            continue
        base = _rows(plain, task=task, model=model).set_index("seed")
        both = runs.set_index("seed").join(base[[*PAIRED, "points"]], rsuffix="_plain", how="inner")
        row = {"task": task, "model": model, "reg": reg, "weight": lam if reg == "istar" else w, "seeds": len(both)}
        for col in PAIRED:
            d = both[col] - both[f"{col}_plain"]
            if col in ON_POINTS:
                d = d[both["points"] == both["points_plain"]]
            n = len(d)
            half = float(student.ppf(0.975, n - 1) * d.std() / np.sqrt(n)) if n > 1 else np.nan
            row.update(
                {
                    f"{col}_diff": d.mean(),
                    f"{col}_diff_std": d.std() if n > 1 else np.nan,
                    f"{col}_diff_ci_low": d.mean() - half,
                    f"{col}_diff_ci_high": d.mean() + half,
                }
            )
        rows.append(row)
    columns = ["task", "model", "reg", "weight", "seeds"] + [
        f"{c}_{s}" for c in PAIRED for s in ("diff", "diff_std", "diff_ci_low", "diff_ci_high")
    ]
    return pd.DataFrame(rows, columns=columns)


CAPTION = (
    "Fine-tuning with a regulariser (I-STAR: loss + λ·(1 − IsoScore*); CosReg: loss + w·mean cosine), held-out "
    "measurements after the last epoch (mean and std over seeds; diverged runs counted, not averaged). metric: MCC for "
    "CoLA, F1 for MRPC, accuracy otherwise; *_points: the regulariser's points (token states); the rest: pooled "
    "outputs; "
    "activation_peak_ratio: max over median of the per-dimension mean |activation| (outlier dimensions raise it)."
)
PAIRED_CAPTION = (
    "Paired differences against the plain run (λ = 0) of the same seed, after the last epoch: mean, std over seeds "
    "and a 95 % t-interval, of the metric, IsoScore* (the regulariser's points; empty where they differ from the plain "
    "run's), and TwoNN and the silhouette (pooled outputs). "
    "A positive metric_diff means the regulariser helped on the held-out data."
)


def _label(reg: str, weight: float) -> str:
    return "none (λ = 0)" if weight == 0 else (f"I-STAR λ={weight:g}" if reg == "istar" else f"CosReg w={weight:g}")


LAYER_METRICS = {"layer_isoscore": "IsoScore", "layer_s_inter": "S_inter", "layer_twonn": "TwoNN"}


def _long_layers(epochs: pd.DataFrame) -> pd.DataFrame:
    """The per-layer measurements (lists per epoch) as one row per run × epoch × layer."""
    rows = []
    cols = [c for c in LAYER_METRICS if c in epochs]
    for _, r in epochs.dropna(subset=cols[:1]).iterrows():
        for layer in range(len(r[cols[0]])):
            rows.append(
                {**{k: r[k] for k in (*KEY, "seed", "epoch")}, "layer": layer, **{c: r[c][layer] for c in cols}}
            )
    return pd.DataFrame(rows)


def layers_table(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Per task × model × regulariser × weight × layer and measurement: its value before training (epoch 0) and after
    the last epoch (means over the seeds that finished), and the change within a seed with a 95 % t-interval over seeds
    — does the classification objective's anisotropy reach the bottom layers?"""
    from scipy.stats import t as student

    epochs, info = _complete(epochs, info)
    long = _long_layers(epochs)
    last_epoch = finals(epochs, info, "epoch", KEY)[[*KEY, "seed", "epoch"]]
    end = long.merge(last_epoch, on=[*KEY, "seed", "epoch"])
    start = long[long.epoch == 0]
    both = end.merge(start.drop(columns="epoch"), on=[*KEY, "seed", "layer"], suffixes=("", "_before"))
    rows = []
    for (task, model, reg, lam, w, layer), g in both.groupby([*KEY, "layer"], sort=True):
        for col, name in LAYER_METRICS.items():
            if col not in g:
                continue
            d = g[col] - g[f"{col}_before"]
            n = int(d.notna().sum())
            half = float(student.ppf(0.975, n - 1) * d.std() / np.sqrt(n)) if n > 1 else np.nan
            rows.append(
                {
                    "task": task,
                    "model": model,
                    "reg": reg,
                    "weight": lam if reg == "istar" else w,
                    "layer": layer,
                    "measure": name,
                    "seeds": n,
                    "before": g[f"{col}_before"].mean(),
                    "after": g[col].mean(),
                    "change": d.mean(),
                    "change_ci_low": d.mean() - half,
                    "change_ci_high": d.mean() + half,
                }
            )
    return pd.DataFrame(rows)


LAYERS_CAPTION = (
    "Per layer of the fine-tuned encoder (0 = embedding layer), on the held-out token states: IsoScore, S_inter "
    "and TwoNN before training (epoch 0) and after the last epoch (means over seeds), and the change within a "
    "seed with a 95 % t-interval over seeds."
)


def _layers_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    """One row per task × model, one panel per measurement against the layer: before training (black, dashed) and
    after the last epoch for every regulariser and weight (I-STAR in λ's colours, CosReg grey dashed)."""
    from matplotlib.lines import Line2D

    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    measures = [m for m in LAYER_METRICS.values() if m in set(table.measure)]
    colour = lambda_colours(sorted(table.loc[table.reg == "istar", "weight"].unique()) or [0.0])
    fig, axes = grid(len(pairs), len(measures), 3.0 * len(pairs) + 0.8, width=4.0)
    handles = {"before training": Line2D([], [], color="black", ls="--", label="before training")}
    for i, (task, model) in enumerate(pairs):
        mine = _rows(table, task=task, model=model)
        for j, measure in enumerate(measures):
            ax = axes[i, j]
            rows = mine[mine.measure == measure]
            before = rows.groupby("layer")["before"].mean()
            ax.plot(before.index, before.values, "k--", lw=1.4)
            for (reg, weight), g in rows.groupby(["reg", "weight"]):
                g = g.sort_values("layer")
                c, ls = (colour[weight], "-") if reg == "istar" else (COSREG_COLOUR, ":")
                label = _label(reg, weight)
                ax.plot(g["layer"], g["after"], color=c, ls=ls, marker="o", ms=3, lw=1.1)
                handles.setdefault(label, Line2D([], [], color=c, ls=ls, marker="o", ms=3, label=label))
            ax.set_title(f"{task} x {model}: {measure}", fontsize=9)
            ax.set_xlabel("layer (0 = embeddings)")
            ax.set_ylabel(f"{measure} (held-out tokens)")
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
    legend_below(fig, list(handles.values()))
    suptitle(
        fig,
        "Fine-tuning: geometry of every layer's held-out token states before training and after the last epoch (seed "
        "means)",
    )
    return save(fig, stem)


def layers_by_epoch(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Per task × model × regulariser × weight, measurement and epoch (0 = before training), every layer's value (one
    column per layer, the mean over the seeds that did not diverge): whether a change that starts in the top layers
    reaches the bottom ones as training goes on."""
    epochs, info = _complete(epochs, info)
    finished = info.loc[~diverged(info), [*KEY, "seed"]]
    long = _long_layers(epochs.merge(finished, on=[*KEY, "seed"]))
    rows = []
    for (task, model, reg, lam, w, epoch), g in long.groupby([*KEY, "epoch"], sort=True):
        for col, name in LAYER_METRICS.items():
            if col not in g:
                continue
            means = g.groupby("layer")[col].mean()
            rows.append(
                {
                    "task": task,
                    "model": model,
                    "reg": reg,
                    "weight": lam if reg == "istar" else w,
                    "measure": name,
                    "epoch": int(epoch),
                    "seeds": int(g["seed"].nunique()),
                    **{f"layer {layer}": v for layer, v in means.items()},
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    order = {name: i for i, name in enumerate(LAYER_METRICS.values())}
    return table.sort_values(
        ["task", "model", "measure", "reg", "weight", "epoch"], key=lambda c: c.map(order) if c.name == "measure" else c
    ).reset_index(drop=True)


LAYERS_BY_EPOCH_CAPTION = (
    "Per layer of the fine-tuned encoder (layer 0 = embedding layer), on the held-out token states: IsoScore, S_inter "
    "and TwoNN after every epoch (epoch 0: before training), means over the seeds that did not diverge."
)


def _shown_by_epoch(table: pd.DataFrame) -> list[tuple[str, float]]:
    """The regulariser settings the per-epoch figure shows: plain fine-tuning, I-STAR's smallest and largest λ, and
    CosReg's first weight (those the sweep has)."""
    istar = sorted(table.loc[(table.reg == "istar") & (table.weight != 0), "weight"].unique())
    cosreg = sorted(table.loc[table.reg == "cosreg", "weight"].unique())
    wanted = [
        ("istar", 0.0),
        *[("istar", lam) for lam in dict.fromkeys(istar[:1] + istar[-1:])],
        *[("cosreg", w) for w in cosreg[:1]],
    ]
    present = set(zip(table.reg, table.weight))
    return [c for c in wanted if c in present]


def _layers_epochs_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    """Per task × model, one row per measurement and one column per regulariser setting (:func:`_shown_by_epoch`),
    the measurement after every epoch, one line per layer (from light, the embeddings, to dark, the top); the panels of
    a row share their y-axis."""
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    measures = [m for m in LAYER_METRICS.values() if m in set(table.measure)]
    shown = _shown_by_epoch(table)
    layers = [c for c in table.columns if c.startswith("layer ")]
    shade = colormaps["viridis_r"]
    colour = {c: shade(0.15 + 0.8 * i / max(len(layers) - 1, 1)) for i, c in enumerate(layers)}
    fig, axes = grid(len(pairs) * len(measures), len(shown), 2.6 * len(pairs) * len(measures) + 0.8, width=3.4)
    for i, (task, model) in enumerate(pairs):
        for j, measure in enumerate(measures):
            row = axes[i * len(measures) + j]
            for ax, (reg, weight) in zip(row, shown):
                g = _rows(table, task=task, model=model, measure=measure, reg=reg, weight=weight).sort_values("epoch")
                for layer in layers:
                    ax.plot(g["epoch"], g[layer], color=colour[layer], marker="o", ms=2.5, lw=1.1)
                name = _label(reg, weight)
                ax.set_title(f"{task} x {model}: {name}", fontsize=8)
                ax.set_xlabel("epoch (0 = before training)")
                ax.set_ylabel(f"{measure} (held-out tokens)")
                ax.xaxis.get_major_locator().set_params(integer=True)
                ax.grid(alpha=0.3)
            low = min(ax.get_ylim()[0] for ax in row)
            high = max(ax.get_ylim()[1] for ax in row)
            for ax in row:
                ax.set_ylim(low, high)
    handles = [
        Line2D([], [], color=colour[c], marker="o", ms=2.5, label=c + (" (embeddings)" if c == "layer 0" else ""))
        for c in layers
    ]
    legend_below(fig, handles)
    suptitle(fig, "Fine-tuning: every layer's held-out token states after every epoch (seed means)")
    return save(fig, stem)


def report(records, tables_dir: str | os.PathLike, figures_dir: str | os.PathLike) -> list[Path]:
    """``records``: the runs' records and the tasks' baseline records (``bag-of-words.json``)."""
    from .controls import CAPTION as CONTROLS_CAPTION
    from .controls import controls_table, split_inputs

    records, baselines = split_inputs(records)
    epochs, info = _complete(*load_runs(records))
    table = summary(epochs, info)
    written = write_table(table, Path(tables_dir) / "finetune", caption=CAPTION, floatfmt="%.4f")
    written += write_table(
        controls_table(records, baselines),
        Path(tables_dir) / "finetune_controls",
        caption=CONTROLS_CAPTION,
        floatfmt="%.4f",
    )
    paired_table = paired(epochs, info)
    written += write_table(paired_table, Path(tables_dir) / "finetune_paired", caption=PAIRED_CAPTION, floatfmt="%.4f")
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    istar = table[table.reg == "istar"]
    written += lambda_points_figure(
        istar,
        "isoscore_star",
        "metric",
        "IsoScore* (held-out, the regulariser's points)",
        "held-out metric",
        "Fine-tuning with I-STAR: held-out performance against IsoScore* (mean ± std over seeds)",
        figures_dir / "finetune_performance",
        ylabel_of={t: f"held-out {METRIC_NAMES.get(m, m)}" for t, m in zip(istar.task, istar.metric_name)},
    )
    written += _twonn_figure(istar, figures_dir / "finetune_twonn")
    finished = info.loc[~diverged(info), list(KEY) + ["seed"]]
    kept = epochs.merge(finished, on=list(KEY) + ["seed"])
    mean = (
        kept[kept.reg == "istar"]
        .groupby(["task", "model", "istar_lambda", "epoch"])[["isoscore", "silhouette"]]
        .mean()
        .reset_index()
    )
    written += lambda_curves_figure(
        mean,
        "epoch",
        "IsoScore (held-out pooled outputs)",
        "silhouette (held-out)",
        "Fine-tuning with I-STAR: silhouette against IsoScore across epochs (open circle: before training, dot: last)",
        figures_dir / "finetune_silhouette_vs_isoscore",
    )
    written += _baselines_figure(table, paired_table, figures_dir / "finetune_baselines")
    written += _epochs_figure(kept, figures_dir / "finetune_epochs")
    if "mean_abs_activation" in epochs:
        written += _activations_figure(finals(epochs, info, "epoch", KEY), figures_dir / "finetune_activations")
    if "layer_isoscore" in epochs and epochs["layer_isoscore"].notna().any():
        per_layer = layers_table(epochs, info)
        written += write_table(per_layer, Path(tables_dir) / "finetune_layers", caption=LAYERS_CAPTION, floatfmt="%.4f")
        written += _layers_figure(per_layer, figures_dir / "finetune_layers")
        by_epoch = layers_by_epoch(epochs, info)
        written += write_table(
            by_epoch, Path(tables_dir) / "finetune_layers_epochs", caption=LAYERS_BY_EPOCH_CAPTION, floatfmt="%.4f"
        )
        written += _layers_epochs_figure(by_epoch, figures_dir / "finetune_layers_epochs")
    return written


def _twonn_figure(table: pd.DataFrame, stem: Path) -> list[Path]:
    colour = lambda_colours(sorted(table["lambda"].unique()))
    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    fig, axes = panels(len(pairs), height=3.3)
    for ax, (task, model) in zip(axes, pairs):
        rows = _rows(table, task=task, model=model).dropna(subset=["twonn_mean"]).sort_values("lambda")
        ax.errorbar(rows["lambda"], rows["twonn_mean"], yerr=rows["twonn_std"], fmt="-", color="0.6", capsize=2)
        ax.scatter(rows["lambda"], rows["twonn_mean"], c=[colour[v] for v in rows["lambda"]], zorder=3)
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_xlabel("λ")
        ax.set_ylabel("TwoNN intrinsic dimension (held-out)")
        ax.grid(alpha=0.3)
    lambda_legend(fig, colour)
    suptitle(fig, "Fine-tuning with I-STAR: intrinsic dimension of the held-out pooled outputs")
    return save(fig, stem)


def _baselines_figure(table: pd.DataFrame, pairs: pd.DataFrame, stem: Path) -> list[Path]:
    """Every regulariser against plain fine-tuning of the same seed (the poster's Figure 6 compares I-STAR at λ < 0 with
    no regularisation and CosReg): the mean paired difference of the held-out metric with its 95 % interval over seeds,
    one panel per task × model on one shared scale, bars from 0. Tasks are never averaged (their metrics differ)."""
    metric_of = {(t, m): name for t, m, name in zip(table.task, table.model, table.metric_name)}
    groups = sorted({(t, m) for t, m in zip(pairs.task, pairs.model)})
    fig, axes = panels(max(len(groups), 1), width=4.2, height=3.4)
    if groups:
        shared = axes[0]
        for ax in axes[1 : len(groups)]:
            ax.sharey(shared)
    for ax, (task, model) in zip(axes, groups):
        rows = _rows(pairs, task=task, model=model).sort_values(
            ["reg", "weight"], key=lambda c: c.map({"istar": 0, "cosreg": 1}) if c.name == "reg" else c
        )
        labels = [_label(r, w) for r, w in zip(rows.reg, rows.weight)]
        colours = [lambda_colour(w) if r == "istar" else COSREG_COLOUR for r, w in zip(rows.reg, rows.weight)]
        mean, low, high = (
            rows.metric_diff.to_numpy(),
            rows.metric_diff_ci_low.to_numpy(),
            rows.metric_diff_ci_high.to_numpy(),
        )
        x = np.arange(len(rows))
        ax.bar(x, mean, color=colours, width=0.7)
        ax.errorbar(x, mean, yerr=np.vstack([mean - low, high - mean]), fmt="none", ecolor="0.2", capsize=3, lw=1)
        ax.axhline(0.0, color="black", lw=0.8)
        pad = max(0.0, (3 - len(rows)) / 2)  # a bar keeps its width when a panel has few
        ax.set_xlim(-0.6 - pad, len(rows) - 0.4 + pad)
        ax.set_xticks(x, labels, rotation=35, ha="right", fontsize=8)
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_ylabel(
            f"held-out {METRIC_NAMES.get(metric_of.get((task, model)), 'metric')}: run − plain run", fontsize=8
        )
        ax.grid(alpha=0.3, axis="y")
    suptitle(
        fig,
        "Fine-tuning: each regulariser against plain fine-tuning of the same seed after the last epoch (mean "
        "paired difference, 95 % interval over seeds; below 0: worse than no regulariser)",
    )
    return save(fig, stem)


METRIC_NAMES = {"f1": "F1", "mcc": "MCC", "accuracy": "accuracy"}  # as figures name the held-out metric
ACTIVATION_COLUMNS = 3  # panels to a row: the regularisers of one task × model wrap into rows of this many


def _activations_figure(last: pd.DataFrame, stem: Path) -> list[Path]:
    """Mean |activation| per dimension of the held-out pooled outputs after the last epoch (seed means), one panel per
    regulariser and weight, the panels of one task × model on one y-scale (the spikes are what is compared): outlier
    dimensions show as spikes (the poster's Figure 1)."""
    configs = sorted(
        {(r, lam, w) for r, lam, w in zip(last.reg, last.istar_lambda, last.cosreg_weight)},
        key=lambda c: (c[0] != "istar", c[1], c[2]),
    )
    pairs = sorted({(t, m) for t, m in zip(last.task, last.model)})
    ncol = min(ACTIVATION_COLUMNS, len(configs))
    rows_per_pair = -(-len(configs) // ncol)
    fig, axes = grid(rows_per_pair * len(pairs), ncol, 2.3 * rows_per_pair * len(pairs) + 0.8, width=3.6)
    for i, (task, model) in enumerate(pairs):
        block = list(axes[i * rows_per_pair : (i + 1) * rows_per_pair].flat)
        for ax in block[1:]:
            ax.sharey(block[0])
        for ax in block[len(configs) :]:
            ax.axis("off")
        for ax, (reg, lam, w) in zip(block, configs):
            runs = _rows(last, task=task, model=model, reg=reg, istar_lambda=lam, cosreg_weight=w)
            if len(runs):
                act = np.mean(np.stack([np.asarray(v, dtype=float) for v in runs["mean_abs_activation"]]), axis=0)
                colour = lambda_colour(lam) if reg == "istar" else COSREG_COLOUR
                ax.fill_between(
                    np.arange(len(act)), act, step="mid", color=colour, lw=0
                )  # one filled outline: no stripes
                ax.set_xlim(-0.5, len(act) - 0.5)
            ax.set_title(f"{task} x {model}: {_label(reg, lam if reg == 'istar' else w)}", fontsize=8)
            ax.set_xlabel("dimension", fontsize=8)
            ax.set_ylabel("mean |activation|", fontsize=8)
            ax.tick_params(labelsize=7)
    suptitle(
        fig,
        "Mean |activation| per dimension of held-out pooled outputs after fine-tuning (seed means; one y-scale "
        "per task × model)",
    )
    return save(fig, stem)


def _epochs_figure(epochs: pd.DataFrame, stem: Path) -> list[Path]:
    """Held-out metric (mean ± std over the seeds that did not diverge) after every epoch, one panel per task × model,
    one curve per regulariser and weight (I-STAR in λ's colours, CosReg grey and dashed). Epoch 0 (an untrained head,
    near chance) is left out: it would squeeze the differences that matter into a few pixels."""
    from matplotlib.lines import Line2D

    colour = lambda_colours(sorted(epochs.loc[epochs.reg == "istar", "istar_lambda"].unique()) or [0.0])
    pairs = sorted({(t, m) for t, m in zip(epochs.task, epochs.model)})
    fig, axes = panels(len(pairs), height=3.3)
    configs = sorted(
        {(r, lam, w) for r, lam, w in zip(epochs.reg, epochs.istar_lambda, epochs.cosreg_weight)},
        key=lambda c: (c[0] != "istar", c[1], c[2]),
    )
    # CosReg in its grey, its weights told apart by the dash (sweeps rarely have more than one)
    dashes = iter(("--", "-.", ":", (0, (5, 1))))
    style = {c: (colour[c[1]], "-") if c[0] == "istar" else (COSREG_COLOUR, next(dashes, "--")) for c in configs}
    for ax, (task, model) in zip(axes, pairs):
        mine = _rows(epochs, task=task, model=model).query("epoch > 0")
        for (reg, lam, w), runs in mine.groupby(["reg", "istar_lambda", "cosreg_weight"]):
            m = runs.groupby("epoch")["metric"].agg(["mean", "std"]).reset_index()
            c, ls = style[(reg, lam, w)]
            ax.errorbar(
                m["epoch"], m["mean"], yerr=m["std"].fillna(0), color=c, ls=ls, marker="o", ms=3, capsize=2, lw=1.2
            )
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylabel(f"held-out {METRIC_NAMES.get(next(iter(mine['metric_name']), ''), 'metric')}")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    handles = [
        Line2D(
            [],
            [],
            color=style[c][0],
            ls=style[c][1],
            marker="o",
            ms=3,
            label=_label(c[0], c[1] if c[0] == "istar" else c[2]),
        )
        for c in configs
    ]
    legend_below(fig, handles)
    suptitle(fig, "Fine-tuning: held-out performance after every epoch (mean ± std over seeds)")
    return save(fig, stem)
