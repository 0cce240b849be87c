"""The fine-tuning sweep's figures.

The I-STAR poster's figures, from the tables and run frames of :mod:`isoflow.finetune.report`:
``finetune_activations`` (mean |activation| per dimension of the held-out pooled outputs: Figure 1),
``finetune_performance`` (held-out metric against IsoScore*, one point per λ: Figure 5), ``finetune_baselines`` (every
regulariser's paired difference in the held-out metric against plain fine-tuning, per task, with its interval: the
comparison of Figure 6), ``finetune_twonn`` (TwoNN against λ: Figure 7), ``finetune_silhouette_vs_isoscore``
(silhouette against IsoScore of the pooled outputs across epochs, one curve per λ) and ``finetune_epochs`` (the
held-out metric after every epoch, one curve per regulariser and weight: is training still improving it?). Runs
measured per layer (``layer_geometry``) add ``finetune_layers``: every layer's IsoScore, S_inter and TwoNN before and
after fine-tuning; and ``finetune_layers_epochs``: every layer after every epoch (does a change in the top layers reach
the bottom ones as training goes on?).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting import rows_where
from ..reporting.figures import (
    CONTROL_COLOUR,
    COSREG_COLOUR,
    grid,
    lambda_colour,
    lambda_colours,
    lambda_curves_figure,
    lambda_legend,
    lambda_points_figure,
    lambda_value,
    legend_below,
    log_axis_if_it_spans,
    message_figure,
    panels,
    save,
    share_limits,
    suptitle,
)
from ..reporting.significance import seed_interval
from .controls import SELECTED_LAST

METRIC_NAMES = {"f1": "F1", "mcc": "MCC", "accuracy": "accuracy"}  # as figures name the held-out metric


def run_label(reg: str, weight: float, unit: str = "") -> str:
    """A run's name in a figure; ``unit``: I-STAR's λ given in units of λ* (:func:`lambda_unit`)."""
    if weight == 0:
        return "none (λ = 0)"
    return f"I-STAR λ = {lambda_value(weight, unit)}" if reg == "istar" else f"CosReg w = {weight:g}"


def lambda_unit(info: pd.DataFrame) -> str:
    """``"λ*"`` where every I-STAR run with λ ≠ 0 set its λ from the penalty's pull (``istar_pull``: λ is then in units
    of λ*, the λ of that pull at the pretrained model), ``""`` where none did. Runs of both kinds in one report would
    put two units on one axis: refused."""
    istar = info[(info.reg == "istar") & (info.istar_lambda != 0)]
    pulled = istar.get("istar_pull", pd.Series(0.0, index=istar.index)).fillna(0) > 0  # older records: no such column
    if len(istar) and pulled.all():
        return "λ*"
    if pulled.any():
        raise ValueError(
            "the runs set I-STAR's λ both from the penalty's pull (istar_pull > 0: λ in units of λ*) and directly; "
            "report each kind on its own (one results folder per config)"
        )
    return ""


def layers_figure(table: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
    """One row per task × model, one panel per measurement against the layer: before training (black, dashed) and
    after the last epoch for every regulariser and weight (I-STAR in λ's colours, CosReg grey dashed)."""
    from matplotlib.lines import Line2D

    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    measures = list(dict.fromkeys(table.measure))  # in the tables' order
    colour = lambda_colours(sorted(table.loc[table.reg == "istar", "weight"].unique()) or [0.0])
    fig, axes = grid(len(pairs), len(measures), 3.0 * len(pairs) + 0.8, width=4.0)
    handles = {"before training": Line2D([], [], color="black", ls="--", label="before training")}
    for i, (task, model) in enumerate(pairs):
        mine = rows_where(table, task=task, model=model)
        for j, measure in enumerate(measures):
            ax = axes[i, j]
            rows = mine[mine.measure == measure]
            before = rows.groupby("layer")["before"].mean()
            ax.plot(before.index, before.values, "k--", lw=1.4)
            for (reg, weight), g in rows.groupby(["reg", "weight"]):
                g = g.sort_values("layer")
                c, ls = (colour[weight], "-") if reg == "istar" else (COSREG_COLOUR, ":")
                label = run_label(reg, weight, unit)
                ax.plot(g["layer"], g["after"], color=c, ls=ls, marker="o", ms=3, lw=1.1)
                handles.setdefault(label, Line2D([], [], color=c, ls=ls, marker="o", ms=3, label=label))
            ax.set_title(f"{task} x {model}: {measure}", fontsize=9)
            ax.set_xlabel("layer (0 = embeddings)")
            log = log_axis_if_it_spans([*before.values, *rows["after"]], ax)
            ax.set_ylabel(f"{measure} (held-out tokens{'; log' if log else ''})")
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
    legend_below(fig, list(handles.values()))
    suptitle(
        fig,
        "Fine-tuning: geometry of every layer's held-out token states before training and after the last epoch (seed "
        "means)",
    )
    return save(fig, stem)


def shown_by_epoch(table: pd.DataFrame) -> list[tuple[str, float]]:
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


def layers_epochs_figure(table: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
    """Per task × model, one row per measurement and one column per regulariser setting (:func:`shown_by_epoch`),
    the measurement after every epoch, one line per layer (from light, the embeddings, to dark, the top); the panels of
    a row share their y-axis."""
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    measures = list(dict.fromkeys(table.measure))  # in the tables' order
    shown = shown_by_epoch(table)
    layers = [c for c in table.columns if c.startswith("layer ")]
    shade = colormaps["viridis_r"]
    colour = {c: shade(0.15 + 0.8 * i / max(len(layers) - 1, 1)) for i, c in enumerate(layers)}
    fig, axes = grid(len(pairs) * len(measures), len(shown), 2.6 * len(pairs) * len(measures) + 0.8, width=3.4)
    for i, (task, model) in enumerate(pairs):
        for j, measure in enumerate(measures):
            row = axes[i * len(measures) + j]
            shown_values = []
            for ax, (reg, weight) in zip(row, shown):
                g = rows_where(table, task=task, model=model, measure=measure, reg=reg, weight=weight).sort_values(
                    "epoch"
                )
                for layer in layers:
                    ax.plot(g["epoch"], g[layer], color=colour[layer], marker="o", ms=2.5, lw=1.1)
                name = run_label(reg, weight, unit)
                ax.set_title(f"{task} x {model}: {name}", fontsize=8)
                ax.set_xlabel("epoch (0 = before training)")
                ax.xaxis.get_major_locator().set_params(integer=True)
                ax.grid(alpha=0.3)
                shown_values.append(g[layers].to_numpy().ravel())
            log = log_axis_if_it_spans(np.concatenate(shown_values), *row)  # one scale for the row's panels
            # on the row's first panel only (the row shares its scale), in lines that fit the panel's height
            row[0].set_ylabel(textwrap.fill(f"{measure} (held-out tokens{'; log' if log else ''})", 28))
            share_limits(row)
    handles = [
        Line2D([], [], color=colour[c], marker="o", ms=2.5, label=c + (" (embeddings)" if c == "layer 0" else ""))
        for c in layers
    ]
    legend_below(fig, handles)
    suptitle(fig, "Fine-tuning: every layer's held-out token states after every epoch (seed means)")
    return save(fig, stem)


def performance_figure(istar: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
    """The held-out metric against IsoScore*, one point per λ (mean ± std over seeds; the poster's Figure 5), from the
    I-STAR rows of the ``finetune`` table."""
    return lambda_points_figure(
        istar,
        "isoscore_star",
        "metric",
        "IsoScore* (held-out, the regulariser's points)",
        "held-out metric",
        "Fine-tuning with I-STAR: held-out performance against IsoScore* after the last epoch (mean ± std over seeds)",
        stem,
        ylabel_of={t: f"held-out {METRIC_NAMES.get(m, m)}" for t, m in zip(istar.task, istar.metric_name)},
        unit=unit,
    )


def silhouette_vs_isoscore_figure(epochs: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
    """Silhouette against IsoScore of the held-out pooled outputs across epochs, one curve per λ (seed means), from
    the per-epoch rows of the runs that finished."""
    mean = (
        epochs[epochs.reg == "istar"]
        .groupby(["task", "model", "istar_lambda", "epoch"])[["isoscore", "silhouette"]]
        .mean()
        .reset_index()
    )
    return lambda_curves_figure(
        mean,
        "epoch",
        "IsoScore (held-out pooled outputs)",
        "silhouette (held-out)",
        "Fine-tuning with I-STAR: silhouette against IsoScore across epochs (open circle: before training, dot: last)",
        stem,
        unit=unit,
    )


def twonn_figure(table: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
    """TwoNN of the held-out pooled outputs against λ after the last epoch, mean ± std over seeds (the poster's Figure
    7), from the I-STAR rows of the ``finetune`` table."""
    colour = lambda_colours(sorted(table.istar_lambda.unique()))
    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    fig, axes = panels(len(pairs), height=3.3)
    for ax, (task, model) in zip(axes, pairs):
        rows = rows_where(table, task=task, model=model).dropna(subset=["twonn_mean"]).sort_values("istar_lambda")
        ax.errorbar(rows.istar_lambda, rows["twonn_mean"], yerr=rows["twonn_std"], fmt="-", color="0.6", capsize=2)
        ax.scatter(rows.istar_lambda, rows["twonn_mean"], c=[colour[v] for v in rows.istar_lambda], zorder=3)
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_xlabel(f"λ (in units of {unit})" if unit else "λ")
        ax.set_ylabel("TwoNN intrinsic dimension (held-out)")
        ax.grid(alpha=0.3)
    lambda_legend(fig, colour, unit=unit)
    suptitle(
        fig,
        "Fine-tuning with I-STAR: intrinsic dimension of the held-out pooled outputs after the last epoch (mean ± std "
        "over seeds)",
    )
    return save(fig, stem)


# The two readings of each run the controls table compares with the plain run of its seed: the table's leading one (the
# epoch of the best validation metric where the runs have a validation split) and after the last epoch.
BASELINE_READINGS = (("selected", "at the best validation epoch", None), ("last", "after the last epoch", "///"))


def baselines_figure(table: pd.DataFrame, controls: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
    """Every regulariser against plain fine-tuning of the same seed (the poster's Figure 6 compares I-STAR at λ < 0
    with no regularisation and CosReg), read as the controls table reads it
    (:func:`isoflow.finetune.controls.controls_table`): the mean paired difference of the held-out metric with its 95 %
    interval over seeds, at the best validation epoch (plain bars) and after the last epoch (hatched), one panel per
    task × model on one shared scale, bars from 0. Runs without a validation split are read at their last epoch only:
    one bar. Tasks are never averaged (their metrics differ)."""
    from matplotlib.patches import Patch

    metric_of = {(t, m): name for t, m, name in zip(table.task, table.model, table.metric_name)}
    compared = controls[controls.weight.notna() & (controls.weight != 0)]  # not the plain runs, not the bag of words
    groups = sorted({(t, m) for t, m in zip(compared.task, compared.model)})
    if not groups:  # e.g. a determinism rerun of plain runs only
        return message_figure(
            stem, "No regulariser among these runs: plain fine-tuning (λ = 0) only, nothing to compare"
        )
    fig, axes = panels(len(groups), width=4.2, height=3.4)
    shared = axes[0]
    for ax in axes[1 : len(groups)]:
        ax.sharey(shared)
    # Without a validation split anywhere, one plain bar to a regulariser (nothing to tell apart: no hatching).
    kinds = (
        BASELINE_READINGS if (compared.selection != SELECTED_LAST).any() else [("last", "after the last epoch", None)]
    )
    for ax, (task, model) in zip(axes, groups):
        rows = rows_where(compared, task=task, model=model).sort_values(
            ["reg", "weight"], key=lambda c: c.map({"istar": 0, "cosreg": 1}) if c.name == "reg" else c
        )
        validated = (rows.selection != SELECTED_LAST).any()
        readings = [r for r in kinds if validated or r[0] == "last"]
        width = 0.8 / len(readings)
        colours = [lambda_colour(w) if r == "istar" else COSREG_COLOUR for r, w in zip(rows.reg, rows.weight)]
        x = np.arange(len(rows))
        ax.use_sticky_edges = False  # a margin below and above the bars: a dot at 0 is not cut by the frame
        for k, (when, _, hatch) in enumerate(readings):
            at = x + (k - (len(readings) - 1) / 2) * width
            mean, low, high = (rows[f"diff_{when}{end}"].to_numpy(float) for end in ("", "_low", "_high"))
            ax.bar(at, mean, color=colours, width=width * 0.9, hatch=hatch, edgecolor="white" if hatch else None)
            ax.errorbar(at, mean, yerr=np.vstack([mean - low, high - mean]), fmt="none", ecolor="0.2", capsize=3, lw=1)
            ax.scatter(at, mean, color=colours, edgecolor="0.2", s=22, zorder=3)  # a difference of 0 has no bar to see
        ax.axhline(0.0, color="black", lw=0.8)
        pad = max(0.0, (3 - len(rows)) / 2)  # a bar keeps its width when a panel has few
        ax.set_xlim(-0.6 - pad, len(rows) - 0.4 + pad)
        labels = [f"{run_label(r, w, unit)}\n({n} seeds)" for r, w, n in zip(rows.reg, rows.weight, rows.seeds)]
        ax.set_xticks(x, labels, rotation=35, ha="right", fontsize=8)
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_ylabel(
            f"held-out {METRIC_NAMES.get(metric_of.get((task, model)), 'metric')}: run − plain run", fontsize=8
        )
        ax.grid(alpha=0.3, axis="y")
    legend_below(
        fig,
        [
            Patch(facecolor="0.55", hatch=hatch, edgecolor="white" if hatch else None, label=name)
            for _, name, hatch in kinds  # two kinds only where some panel has a validation split: each drawn somewhere
        ],
    )
    suptitle(
        fig,
        "Fine-tuning: each regulariser against plain fine-tuning of the same seed (mean paired difference, 95 % "
        "interval over seeds; below 0: worse than no regulariser)",
    )
    return save(fig, stem)


ACTIVATION_COLUMNS = 3  # panels to a row: the regularisers of one task × model wrap into rows of this many


def activations_figure(last: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
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
            runs = rows_where(last, task=task, model=model, reg=reg, istar_lambda=lam, cosreg_weight=w)
            if len(runs):
                act = np.mean(np.stack([np.asarray(v, dtype=float) for v in runs["mean_abs_activation"]]), axis=0)
                colour = lambda_colour(lam) if reg == "istar" else COSREG_COLOUR
                ax.fill_between(
                    np.arange(len(act)), act, step="mid", color=colour, lw=0
                )  # one filled outline: no stripes
                ax.set_xlim(-0.5, len(act) - 0.5)
            ax.set_title(f"{task} x {model}: {run_label(reg, lam if reg == 'istar' else w, unit)}", fontsize=8)
            ax.set_xlabel("dimension", fontsize=8)
            ax.set_ylabel("mean |activation|", fontsize=8)
            ax.tick_params(labelsize=7)
    suptitle(
        fig,
        "Mean |activation| per dimension of held-out pooled outputs after fine-tuning (seed means; one y-scale "
        "per task × model)",
    )
    return save(fig, stem)


def epochs_figure(epochs: pd.DataFrame, stem: Path, unit: str = "") -> list[Path]:
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
        mine = rows_where(epochs, task=task, model=model).query("epoch > 0")
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
            label=run_label(c[0], c[1] if c[0] == "istar" else c[2], unit),
        )
        for c in configs
    ]
    legend_below(fig, handles)
    suptitle(fig, "Fine-tuning: held-out performance after every epoch (mean ± std over seeds)")
    return save(fig, stem)


def strength_control_figure(seeds: pd.DataFrame, bound: float, stem: Path) -> list[Path]:
    """The strength-matched control seed by seed (the table finetune_strength_control_seeds): each arm's run minus its
    own λ = 0 run of the same seed, one point per seed, its mean and 95 % interval over seeds beside; left the held-out
    metric at the best validation epoch, right IsoScore* against the pretrained Σ_S after the last epoch with the
    manipulation check's bound (± ``bound`` around 0) shaded. I-STAR at +λ* in λ's colour, the control in its own."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    arms = list(dict.fromkeys(seeds["arm"]))  # the intervention first, as the table has them
    colour = {a: lambda_colour(1.0) if a.startswith("I-STAR") else CONTROL_COLOUR for a in arms}
    label = {
        a: "I-STAR at +λ*\n(the fair sweep)" if a.startswith("I-STAR") else "mean-direction\ncontrol" for a in arms
    }
    fig, axes = panels(2, width=4.2, height=3.4)
    for ax, column, title, name in (
        (axes[0], "metric", "held-out accuracy", "held-out accuracy at the best validation epoch"),
        (axes[1], "isoscore_star", "IsoScore*", "IsoScore* (pretrained Σ_S), after the last epoch"),
    ):
        for x, arm in enumerate(arms):
            values = seeds.loc[seeds["arm"] == arm, column].to_numpy(float)
            jitter = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else np.zeros(1)
            ax.scatter(x - 0.15 + jitter, values, color=colour[arm], s=16, alpha=0.8, zorder=3)
            r = seed_interval(values)
            ax.errorbar(x + 0.2, r["mean"], yerr=[[r["mean"] - r["low"]], [r["high"] - r["mean"]]], fmt="o",
                        color=colour[arm], ecolor="0.2", capsize=3, ms=6, zorder=4)  # fmt: skip
        if column == "isoscore_star":
            ax.axhspan(-bound, bound, color="0.85", zorder=0)
        ax.axhline(0.0, color="black", lw=0.8)
        ax.set_xticks(range(len(arms)), [label[a] for a in arms], fontsize=8)
        ax.set_xlim(-0.6, len(arms) - 0.4)
        ax.set_ylabel(f"{name}:\nrun − its own λ = 0 run", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    legend_below(
        fig,
        [
            Line2D([], [], color="0.3", marker="o", ls="none", ms=4, label="one seed"),
            Line2D([], [], color="0.3", marker="o", ls="none", ms=6, label="mean, 95 % interval over seeds"),
            Patch(facecolor="0.85", label=f"the control's bound: ± {bound:.4f} (a quarter of +λ*'s mean shift)"),
        ],
    )
    suptitle(fig, "The strength-matched control: each arm against its own λ = 0, seed by seed")
    return save(fig, stem)
