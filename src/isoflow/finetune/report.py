"""The fine-tuning sweep's table and figures, from its run records.

Per task × model × λ (the last epoch; mean and std over the seeds that did not diverge, which are counted):
held-out accuracy and the task's own metric (MCC for CoLA, F1 for MRPC), IsoScore*, IsoScore, silhouette, TwoNN
and LID of the held-out sentence embeddings. Figures: ``finetune_performance`` (held-out metric against IsoScore*,
one point per λ: the I-STAR poster's Figure 5), ``finetune_twonn`` (TwoNN against λ: its Figure 7),
``finetune_silhouette_vs_isoscore`` (silhouette against IsoScore across epochs, one curve per λ).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..records import load_runs
from ..reporting import diverged, lambda_summary, write_table
from ..reporting.figures import lambda_colours, lambda_curves_figure, lambda_legend, lambda_points_figure, panels, save, suptitle
from ..reporting.sweeps import finals

FINAL = ("metric", "accuracy", "isoscore_star", "isoscore", "silhouette", "twonn", "lid_mle")
RUN = ["task", "model", "istar_lambda", "seed"]


def summary(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """One row per task × model × λ (:func:`isoflow.reporting.lambda_summary`), with the name of the task's metric."""
    table = lambda_summary(epochs, info, order="epoch", length="epochs", columns=FINAL)
    last = finals(epochs, info, "epoch")
    names = [next(iter(last.loc[(last.task == t) & (last.model == m) & (last.istar_lambda == lam), "metric_name"]), "")
             for t, m, lam in zip(table.task, table.model, table["lambda"])]
    table.insert(table.columns.get_loc("epochs") + 1, "metric_name", names)
    return table


CAPTION = ("Fine-tuning with I-STAR (loss + λ·(1 − IsoScore*) on the batch's sentence embeddings): held-out "
           "measurements after the last epoch (mean and std over seeds; diverged runs counted, not averaged). metric: "
           "MCC for CoLA, F1 for MRPC, accuracy otherwise.")


def report(records, tables_dir: str | os.PathLike, figures_dir: str | os.PathLike) -> list[Path]:
    epochs, info = load_runs(records)
    table = summary(epochs, info)
    written = write_table(table, Path(tables_dir) / "finetune", caption=CAPTION, floatfmt="%.4f")
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    written += lambda_points_figure(table, "isoscore_star", "metric", "IsoScore* of held-out sentence embeddings",
                                    "held-out metric", "Fine-tuning with I-STAR: held-out performance against IsoScore* "
                                    "(mean ± std over seeds)", figures_dir / "finetune_performance")
    colour = lambda_colours(sorted(table["lambda"].unique()))
    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    fig, axes = panels(len(pairs), height=3.3)
    for ax, (task, model) in zip(axes, pairs):
        rows = table[(table.task == task) & (table.model == model)].dropna(subset=["twonn_mean"])
        ax.errorbar(rows["lambda"], rows["twonn_mean"], yerr=rows["twonn_std"], fmt="-", color="0.6", capsize=2)
        ax.scatter(rows["lambda"], rows["twonn_mean"], c=[colour[v] for v in rows["lambda"]], zorder=3)
        ax.set_title(f"{task} x {model}", fontsize=9)
        ax.set_xlabel("λ")
        ax.set_ylabel("TwoNN intrinsic dimension (held-out)")
        ax.grid(alpha=0.3)
    lambda_legend(fig, colour)
    suptitle(fig, "Fine-tuning with I-STAR: intrinsic dimension of held-out sentence embeddings")
    written += save(fig, figures_dir / "finetune_twonn")

    finished = info.loc[~diverged(info), RUN]
    mean = epochs.merge(finished, on=RUN).groupby(["task", "model", "istar_lambda", "epoch"])[["isoscore", "silhouette"]].mean().reset_index()
    written += lambda_curves_figure(mean, "epoch", "IsoScore (held-out)", "silhouette (held-out)", "Fine-tuning with I-STAR: "
                                    "silhouette against IsoScore across epochs (epoch 0: before training)",
                                    figures_dir / "finetune_silhouette_vs_isoscore")
    return written
