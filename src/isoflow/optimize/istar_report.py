"""The I-STAR sweep in the optimisation experiment: its table and figures, from an aggregate of its runs.

Per task × model × λ (seeds averaged; runs that diverged are counted, never averaged):

* final IsoScore, IsoScore*, silhouette, task loss and training accuracy (mean ± std over seeds). "Performance" is
  training accuracy: the optimize section has no held-out data (it studies the optimisation itself); held-out
  performance is the finetune section's;
* Pearson r and Spearman ρ between IsoScore and silhouette over training (updates 1..N, seed-mean curve), as in
  the main tables, now within each λ.

Figures: (a) ``istar_performance``: training accuracy and task loss against IsoScore*, one point per λ (I-STAR's Figure
5 analogue); (b) ``istar_curves``: silhouette and IsoScore across training, one curve per λ; (c)
``istar_silhouette_vs_isoscore``: silhouette against IsoScore during training, one curve per λ; (d) ``istar_hidden``,
only where a non-linear head's runs measured it: (c) for the head's last hidden output, every panel on one scale
and IsoScore on a log axis.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting import diverged, lambda_summary, paired_with_plain, write_table
from ..reporting.figures import (
    grid,
    lambda_colours,
    lambda_curves_figure,
    lambda_legend,
    lambda_points_figure,
    save,
    share_limits,
    suptitle,
    trajectory,
    trajectory_ends,
)
from .report import correlation

FINAL = ("isoscore", "isoscore_star", "silhouette", "loss", "accuracy")
HIDDEN = ("silhouette_hidden", "isoscore_hidden")  # a non-linear head's last hidden output (runs that measured it)
# Paired with the plain run of the same seed (λ = 0), at the last update: Mickus et al.'s link, read over seeds (and,
# where a non-linear head's hidden output was measured, the same for it: whether the penalty on the table reaches it)
PAIRED = ("isoscore", "silhouette")


def measured_hidden(traj: pd.DataFrame) -> bool:
    """Whether these trajectories measured a non-linear head's hidden output (runs with hidden layers do)."""
    return all(c in traj and traj[c].notna().any() for c in HIDDEN)


def summary(traj: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """The sweep's table: one row per task × model × λ (:func:`isoflow.reporting.lambda_summary`), with the
    IsoScore–silhouette correlation over training on the finished runs' seed-mean curve: of the table
    (``pearson_r``, ``spearman_rho``) and, where the runs measured it, of a non-linear head's hidden output
    (``pearson_r_hidden``, ``spearman_rho_hidden``)."""
    hidden = measured_hidden(traj)
    table = lambda_summary(traj, info, order="step", length="steps", columns=[*FINAL, *(HIDDEN if hidden else ())])
    finished = info.loc[~diverged(info), ["task", "model", "istar_lambda", "seed"]]
    after = traj[traj.step >= 1].merge(finished, on=["task", "model", "istar_lambda", "seed"])
    pairs = {"": ("isoscore", "silhouette")}
    if hidden:
        pairs["_hidden"] = ("isoscore_hidden", "silhouette_hidden")
    for suffix, (iso, sil) in pairs.items():
        r, rho = [], []
        for task, model, lam in zip(table.task, table.model, table.istar_lambda):
            t = after[(after.task == task) & (after.model == model) & (after.istar_lambda == lam)]
            mean = t.groupby("step")[[iso, sil]].mean().dropna()  # the hidden output: the updates it was measured at
            a, b = correlation(mean[iso].to_numpy(), mean[sil].to_numpy()) if len(mean) > 1 else (np.nan, np.nan)
            r.append(a)
            rho.append(b)
        table[f"pearson_r{suffix}"], table[f"spearman_rho{suffix}"] = r, rho
    paired = paired_with_plain(traj, info, order="step", columns=PAIRED + (HIDDEN if hidden else ()))
    return table.merge(paired, on=["task", "model", "istar_lambda"], how="left")


CAPTION = (
    "I-STAR sweep in the optimisation experiment: final values after training with loss + λ·(1 − IsoScore*) "
    "(mean and std over seeds; diverged runs counted, not averaged). Accuracy is training accuracy. "
    "r, ρ: IsoScore vs silhouette over training (seed-mean curve). *_diff: the final IsoScore and silhouette paired "
    "with the plain run (λ = 0) of the same seed: mean over paired_seeds, std and a 95 % t-interval."
)


CURVE_COLUMNS = 3  # task x model panels to a row in istar_curves

HEADS_CAPTION = (
    "The classifier's depth: this sweep against a baseline sweep (the paper's linear head) on the same task, model "
    "and λ, final values (mean over seeds) and r, ρ between IsoScore and silhouette over training; "
    "diff: this − baseline."
)
HEADS_CAPTION_HIDDEN = (  # said only where the runs measured it
    " *_hidden: the non-linear head's last hidden output, which its final linear layer separates (r, ρ between its "
    "IsoScore and its silhouette)."
)


def head_of(info: pd.DataFrame) -> str:
    """The classifier a sweep's runs were trained with (``linear``, ``mlp1``, ``mlp2``), read from their settings."""
    from .settings import head_dir

    # runs recorded before heads existed have no head (NaN in the aggregate): the paper's linear one
    heads = {
        head_dir(h if isinstance(h, str) else "linear", int(n) if n == n else 1) or "linear"
        for h, n in zip(info.get("head", [None] * len(info)), info.get("head_layers", [1] * len(info)))
    }
    return " / ".join(sorted(heads))


def heads_table(table: pd.DataFrame, baseline: pd.DataFrame, this: str, base: str) -> pd.DataFrame:
    """One row per task × model × λ both sweeps have: final silhouette, IsoScore and accuracy, and r, ρ, for this
    sweep's head, the baseline's (``_baseline``), and their difference (``_diff``)."""
    keys = ["task", "model", "istar_lambda"]
    cols = ["silhouette_mean", "isoscore_mean", "accuracy_mean", "pearson_r", "spearman_rho"]
    both = table[keys + cols].merge(baseline[keys + cols], on=keys, suffixes=("", "_baseline"))
    for c in cols:
        both[f"{c}_diff"] = both[c] - both[f"{c}_baseline"]
    hidden = [  # this head's hidden output, where measured
        c for c in (*(f"{h}_mean" for h in HIDDEN), "pearson_r_hidden", "spearman_rho_hidden") if c in table
    ]
    if hidden:
        both = both.merge(table[keys + hidden], on=keys)
    both.insert(3, "head", this)
    both.insert(4, "baseline_head", base)
    return both.sort_values(keys).reset_index(drop=True)


def heads_figure(mean: pd.DataFrame, base_mean: pd.DataFrame, this: str, base: str, stem: Path) -> list[Path]:
    """Silhouette against IsoScore during training, one panel per task × model: this sweep's curves solid, the
    baseline's dashed, one colour per λ (the λs both have); an open circle at the start of each, a dot at its end
    (:func:`~isoflow.reporting.figures.trajectory`)."""
    from matplotlib.lines import Line2D

    from ..reporting.figures import panels

    pairs = sorted(
        {(t, m) for t, m in zip(mean.task, mean.model)} & {(t, m) for t, m in zip(base_mean.task, base_mean.model)}
    )
    lams = sorted(set(mean.istar_lambda) & set(base_mean.istar_lambda))
    colour = lambda_colours(lams)
    fig, axes = panels(max(len(pairs), 1), width=3.6, height=3.2)
    for ax, (task, model) in zip(axes, pairs):
        for frame, style in ((mean, "-"), (base_mean, "--")):
            for lam, m in frame[(frame.task == task) & (frame.model == model) & frame.istar_lambda.isin(lams)].groupby(
                "istar_lambda"
            ):
                m = m.sort_values("step")
                trajectory(ax, m["isoscore"], m["silhouette"], colour[lam], ls=style)
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_xlabel("IsoScore")
        ax.set_ylabel("silhouette")
        ax.grid(alpha=0.3)
    heads = [
        Line2D([], [], color="0.3", ls="-", label=f"{this} head"),
        Line2D([], [], color="0.3", ls="--", label=f"{base} head"),
    ]
    lambda_legend(fig, colour, extra=[*heads, *trajectory_ends("step")])
    suptitle(
        fig,
        f"Silhouette against IsoScore during training: the {this} head (solid) against the {base} head (dashed), "
        "seed means; open circle: start, dot: end of training",
    )
    return save(fig, stem)


def heads(traj, info, base_traj, base_info, tables_dir, figures_dir) -> list[Path]:
    """The comparison with a baseline sweep: the table ``istar_heads`` and the figure ``istar_heads``."""
    this, base = head_of(info), head_of(base_info)
    table = heads_table(summary(traj, info), summary(base_traj, base_info), this, base)
    hidden = any(f"{c}_mean" in table for c in HIDDEN)  # as heads_table finds them
    written = write_table(
        table,
        Path(tables_dir) / "istar_heads",
        caption=HEADS_CAPTION + (HEADS_CAPTION_HIDDEN if hidden else ""),
        floatfmt="%.4f",
    )
    means = []
    for t, i in ((traj, info), (base_traj, base_info)):
        finished = i.loc[~diverged(i), ["task", "model", "istar_lambda", "seed"]]
        kept = t.merge(finished, on=["task", "model", "istar_lambda", "seed"])
        means.append(
            kept.groupby(["task", "model", "istar_lambda", "step"])[["silhouette", "isoscore"]].mean().reset_index()
        )
    Path(figures_dir).mkdir(parents=True, exist_ok=True)
    return written + heads_figure(*means, this, base, Path(figures_dir) / "istar_heads")


def tables(traj: pd.DataFrame, info: pd.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    table = summary(traj, info)
    hidden = "silhouette_hidden_diff" in table
    caption = CAPTION + (" *_hidden: a non-linear head's last hidden output, paired alike." if hidden else "")
    return write_table(table, Path(out_dir) / "istar", caption=caption, floatfmt="%.4f")


def figures(traj: pd.DataFrame, info: pd.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = summary(traj, info)
    pairs = sorted({(t, m) for t, m in zip(info.task, info.model)})
    colour = lambda_colours(sorted(info.istar_lambda.unique()))
    written = []

    # (a) performance against IsoScore*, one point per lambda: training accuracy, and the task loss (accuracy saturates
    # on most tasks, the loss does not)
    written += lambda_points_figure(
        table,
        "isoscore_star",
        ("accuracy", "loss"),
        "IsoScore* (final)",
        ("training accuracy (final)", "task loss (final)"),
        "I-STAR sweep: performance against IsoScore* (mean ± std over seeds)",
        out_dir / "istar_performance",
        ymax=(1.0, None),
    )

    finished = info.loc[~diverged(info), ["task", "model", "istar_lambda", "seed"]]
    t = traj.merge(finished, on=["task", "model", "istar_lambda", "seed"])
    mean = t.groupby(["task", "model", "istar_lambda", "step"])[["silhouette", "isoscore"]].mean().reset_index()

    # (b) silhouette and IsoScore across training, one curve per lambda (each task's own weights); the task x model
    # panels wrap into rows of CURVE_COLUMNS, each with its silhouette above its IsoScore
    ncol = min(CURVE_COLUMNS, len(pairs))
    blocks = -(-len(pairs) // ncol)
    fig, axes = grid(2 * blocks, ncol, 5.2 * blocks + 0.8, width=4.0)
    for k, (task, model) in enumerate(pairs):
        top, bottom = axes[2 * (k // ncol), k % ncol], axes[2 * (k // ncol) + 1, k % ncol]
        for lam, m in mean[(mean.task == task) & (mean.model == model)].groupby("istar_lambda"):
            top.plot(m["step"], m["silhouette"], color=colour[lam], lw=1.2)
            bottom.plot(m["step"], m["isoscore"], color=colour[lam], lw=1.2)
        top.set_title(f"{task} x {model}", fontsize=9)
        top.set_ylabel("silhouette")
        bottom.set_ylabel("IsoScore")
        bottom.set_xlabel("update")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    for row in (0, 1):  # every task on one silhouette scale and one IsoScore scale
        share_limits([axes[2 * (k // ncol) + row, k % ncol] for k in range(len(pairs))])
    for k in range(len(pairs), blocks * ncol):
        axes[2 * (k // ncol), k % ncol].axis("off")
        axes[2 * (k // ncol) + 1, k % ncol].axis("off")
    lambda_legend(fig, colour)
    suptitle(fig, "I-STAR sweep: silhouette and IsoScore across training (seed means)")
    written += save(fig, out_dir / "istar_curves")

    # (c) silhouette against IsoScore, one curve per lambda
    written += lambda_curves_figure(
        mean,
        "step",
        "IsoScore",
        "silhouette",
        "I-STAR sweep: silhouette against IsoScore during training (open circle: start, dot: end)",
        out_dir / "istar_silhouette_vs_isoscore",
        one_scale=True,  # every task on the same axes, as in istar_curves
    )

    # (d) where a non-linear head's runs measured it: the same for its last hidden output, the representation its
    # final linear layer separates
    if measured_hidden(t):
        measured = t.dropna(subset=list(HIDDEN))  # at the updates `hidden_updates` chose
        hidden = measured.groupby(["task", "model", "istar_lambda", "step"])[list(HIDDEN)].mean().reset_index()
        written += lambda_curves_figure(
            hidden.rename(columns={"silhouette_hidden": "silhouette", "isoscore_hidden": "isoscore"}),
            "step",
            "IsoScore of the hidden output",
            "silhouette of the hidden output",
            f"I-STAR sweep, {head_of(info)} head: its last hidden output's silhouette against IsoScore during training"
            " (open circle: start, dot: end)",
            out_dir / "istar_hidden",
            one_scale=True,  # its IsoScore falls 4 orders of magnitude, mostly in the first few dozen updates
        )
    return written
