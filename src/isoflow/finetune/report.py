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

import numpy as np
import pandas as pd

from ..experiment.analysis import _save, write_table
from ..experiment.istar_report import _diverged, _lambda_colours, _panels, lambda_curves_figure, lambda_points_figure
from ..experiment.records import load_runs

FINAL = ("metric", "accuracy", "isoscore_star", "isoscore", "silhouette", "twonn", "lid_mle")


def summary(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    info = info.assign(diverged=_diverged(info))
    last = epochs.sort_values("epoch").groupby(["task", "model", "istar_lambda", "seed"], as_index=False).tail(1)
    ok = info.loc[~info["diverged"], ["task", "model", "istar_lambda", "seed"]]
    last = last.merge(ok, on=["task", "model", "istar_lambda", "seed"])
    rows = []
    for (task, model, lam), runs in info.groupby(["task", "model", "istar_lambda"], sort=True):
        f = last[(last.task == task) & (last.model == model) & (last.istar_lambda == lam)]
        row = {"task": task, "model": model, "lambda": lam, "seeds": int((~runs["diverged"]).sum()), "diverged": int(runs["diverged"].sum()),
               "epochs": int(runs["epochs"].max()), "metric_name": f["metric_name"].iloc[0] if len(f) else ""}
        for col in FINAL:
            row[f"{col}_mean"] = f[col].mean() if len(f) else np.nan
            row[f"{col}_std"] = f[col].std() if len(f) > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


CAPTION = ("Fine-tuning with I-STAR (loss + λ·(1 − IsoScore*) on the batch's sentence embeddings): held-out "
           "measurements after the last epoch (mean and std over seeds; diverged runs counted, not averaged). metric: "
           "MCC for CoLA, F1 for MRPC, accuracy otherwise.")


def report(records, tables_dir: str | os.PathLike, figures_dir: str | os.PathLike) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs, info = load_runs(records)
    table = summary(epochs, info)
    written = write_table(table, Path(tables_dir) / "finetune", caption=CAPTION, floatfmt="%.4f")
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    written += lambda_points_figure(table, "isoscore_star", "metric", "IsoScore* of held-out sentence embeddings",
                                    "held-out metric", "Fine-tuning with I-STAR: held-out performance against IsoScore* "
                                    "(mean ± std over seeds)", figures_dir / "finetune_performance")
    colour = _lambda_colours(sorted(table["lambda"].unique()))
    pairs = sorted({(t, m) for t, m in zip(table.task, table.model)})
    fig, axes = _panels(len(pairs))
    for ax, (task, model) in zip(axes, pairs):
        rows = table[(table.task == task) & (table.model == model)].dropna(subset=["twonn_mean"])
        ax.errorbar(rows["lambda"], rows["twonn_mean"], yerr=rows["twonn_std"], fmt="-", color="0.6", capsize=2)
        ax.scatter(rows["lambda"], rows["twonn_mean"], c=[colour[v] for v in rows["lambda"]], zorder=3)
        ax.set_title(f"{task} x {model}")
        ax.set_xlabel("λ")
        ax.set_ylabel("TwoNN intrinsic dimension (held-out)")
        ax.grid(alpha=0.3)
    fig.suptitle("Fine-tuning with I-STAR: intrinsic dimension of held-out sentence embeddings", fontsize=10)
    written += _save(fig, figures_dir / "finetune_twonn")
    plt.close(fig)

    ok = info.assign(diverged=_diverged(info)).loc[lambda d: ~d["diverged"], ["task", "model", "istar_lambda", "seed"]]
    mean = epochs.merge(ok, on=["task", "model", "istar_lambda", "seed"]).groupby(
        ["task", "model", "istar_lambda", "epoch"])[["isoscore", "silhouette"]].mean().reset_index()
    written += lambda_curves_figure(mean, "epoch", "IsoScore (held-out)", "silhouette (held-out)", "Fine-tuning with I-STAR: "
                                    "silhouette against IsoScore across epochs (epoch 0: before training)",
                                    figures_dir / "finetune_silhouette_vs_isoscore")
    return written
