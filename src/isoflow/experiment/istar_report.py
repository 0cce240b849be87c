"""The I-STAR sweep in the optimisation experiment: its table and three figures, from an aggregate of its runs.

Per task × model × λ (seeds averaged; runs that diverged are counted, never averaged):

* final IsoScore, IsoScore*, silhouette, task loss and training accuracy (mean ± std over seeds). "Performance" is
  training accuracy: the table experiment has no held-out data (it studies the optimisation itself); held-out
  performance is the fine-tuning experiment's;
* Pearson r and Spearman ρ between IsoScore and silhouette over training (updates 1..N, seed-mean curve), as in
  the main tables, now within each λ.

Figures: (a) ``istar_performance``: training accuracy and task loss against IsoScore*, one point per λ (I-STAR's Figure 5 analogue);
(b) ``istar_curves``: silhouette and IsoScore across training, one curve per λ; (c)
``istar_silhouette_vs_isoscore``: silhouette against IsoScore during training, one curve per λ.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from .analysis import _corr, _save, write_table

FINAL = ("isoscore", "isoscore_star", "silhouette", "loss", "accuracy")
KEY = ["task", "model", "istar_lambda"]


def _diverged(info: pd.DataFrame) -> pd.Series:
    if "diverged" not in info:
        return pd.Series(False, index=info.index)
    # runs.csv holds True/False, or nothing for runs made before the column existed (read as NaN: not diverged)
    return info["diverged"].map(lambda v: str(v).lower() in ("true", "1", "1.0"))


def finals(traj: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """One row per completed (not diverged) run: its last recorded state."""
    ok = info.loc[~_diverged(info), ["task", "model", "istar_lambda", "seed"]]
    last = traj.sort_values("step").groupby(["task", "model", "istar_lambda", "seed"], as_index=False).tail(1)
    return last.merge(ok, on=["task", "model", "istar_lambda", "seed"])


def summary(traj: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """The sweep's table: one row per task × model × λ."""
    info = info.assign(diverged=_diverged(info))
    final = finals(traj, info)
    rows = []
    for (task, model, lam), runs in info.groupby(KEY, sort=True):
        row = {"task": task, "model": model, "lambda": lam, "seeds": int((~runs["diverged"]).sum()), "diverged": int(runs["diverged"].sum()),
               "steps": int(runs["steps"].max())}
        f = final[(final.task == task) & (final.model == model) & (final.istar_lambda == lam)]
        for col in FINAL:
            row[f"{col}_mean"] = f[col].mean() if len(f) else np.nan
            row[f"{col}_std"] = f[col].std() if len(f) > 1 else np.nan
        complete = set(runs.loc[~runs["diverged"], "seed"])
        t = traj[(traj.task == task) & (traj.model == model) & (traj.istar_lambda == lam) & traj.seed.isin(complete) & (traj.step >= 1)]
        mean = t.groupby("step")[["isoscore", "silhouette"]].mean()
        row["pearson_r"], row["spearman_rho"] = _corr(mean["isoscore"].to_numpy(), mean["silhouette"].to_numpy()) if len(mean) > 1 else (np.nan, np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


CAPTION = ("I-STAR sweep in the optimisation experiment: final values after training with loss + λ·(1 − IsoScore*) "
           "(mean and std over seeds; diverged runs counted, not averaged). Accuracy is training accuracy. "
           "r, ρ: IsoScore vs silhouette over training (seed-mean curve).")


def tables(traj: pd.DataFrame, info: pd.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    return write_table(summary(traj, info), Path(out_dir) / "istar", caption=CAPTION, floatfmt="%.4f")


def _grid(nrow: int, ncol: int, height: float, width: float = 3.8):
    """An nrow × ncol grid of panels, ``width`` wide each (at least 6 in all) and ``height`` high in all."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(nrow, ncol, figsize=(max(width * ncol, 6.0), height), squeeze=False, constrained_layout=True)


def _panels(n: int, width: float = 3.8, height: float = 3.0):
    """n panels, at most 4 to a row; the unused ones of the last row are hidden."""
    ncol = min(4, n)
    nrow = -(-n // ncol)
    fig, axes = _grid(nrow, ncol, height * nrow, width)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return fig, list(axes.flat)


def _lambda_colours(lams):
    import matplotlib

    cmap = matplotlib.colormaps["coolwarm"]
    lo, hi = min(lams), max(lams)
    span = max(abs(lo), abs(hi)) or 1.0
    # Blue: isotropy pushed down (λ < 0); red: pushed up; black: the plain run (λ = 0).
    return {lam: "black" if lam == 0 else cmap(0.5 + 0.5 * lam / span) for lam in lams}


def lambda_points_figure(table: pd.DataFrame, x: str, y: str | tuple[str, ...], xlabel: str, ylabel: str | tuple[str, ...],
                         title: str, stem: Path) -> list[Path]:
    """One panel per task: ``{y}_mean`` against ``{x}_mean`` with std error bars, one point per λ (coloured, labelled),
    one marker per model: I-STAR's Figure 5 layout, shared by the table experiment and fine-tuning. Several ``y``
    (with as many ``ylabel``) give one row of panels each."""
    import matplotlib.pyplot as plt

    ys, ylabels = ((y,), (ylabel,)) if isinstance(y, str) else (tuple(y), tuple(ylabel))
    colour = _lambda_colours(sorted(table["lambda"].unique()))
    tasks = sorted(table.task.unique())
    if len(ys) == 1:
        fig, axes = _panels(len(tasks))
        cells = [(ax, task, ys[0], ylabels[0]) for ax, task in zip(axes, tasks)]
    else:
        fig, grid = _grid(len(ys), len(tasks), 3.0 * len(ys))
        cells = [(grid[i, j], task, yi, li) for i, (yi, li) in enumerate(zip(ys, ylabels)) for j, task in enumerate(tasks)]
    markers = dict(zip(sorted(table.model.unique()), "osD^v"))
    for ax, task, y, ylabel in cells:
        for model, rows in table[table.task == task].groupby("model"):
            rows = rows.dropna(subset=[f"{y}_mean"])
            ax.errorbar(rows[f"{x}_mean"], rows[f"{y}_mean"], xerr=rows[f"{x}_std"], yerr=rows[f"{y}_std"],
                        fmt=markers[model], ls="-", lw=0.8, color="0.6", ecolor="0.4", mfc="none", label=model, capsize=2)
            for _, r in rows.iterrows():
                ax.scatter(r[f"{x}_mean"], r[f"{y}_mean"], color=colour[r["lambda"]], marker=markers[model], zorder=3)
                ax.annotate(f"λ={r['lambda']:g}", (r[f"{x}_mean"], r[f"{y}_mean"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_title(task)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    written = _save(fig, stem)
    plt.close(fig)
    return written


def lambda_curves_figure(mean: pd.DataFrame, order: str, xlabel: str, ylabel: str, title: str, stem: Path) -> list[Path]:
    """One panel per task × model: seed-mean silhouette against IsoScore, one curve per λ in ``order`` (step or
    epoch), a dot at its end. Shared by the table experiment's sweep and fine-tuning."""
    import matplotlib.pyplot as plt

    pairs = sorted({(t, m) for t, m in zip(mean.task, mean.model)})
    colour = _lambda_colours(sorted(mean["istar_lambda"].unique()))
    fig, axes = _panels(len(pairs))
    for ax, (task, model) in zip(axes, pairs):
        for lam, m in mean[(mean.task == task) & (mean.model == model)].groupby("istar_lambda"):
            m = m.sort_values(order)
            ax.plot(m["isoscore"], m["silhouette"], color=colour[lam], lw=1.2, label=f"λ={lam:g}")
            ax.scatter(m["isoscore"].iloc[-1:], m["silhouette"].iloc[-1:], color=colour[lam], s=12)
        ax.set_title(f"{task} x {model}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(title, fontsize=10)
    written = _save(fig, stem)
    plt.close(fig)
    return written


def figures(traj: pd.DataFrame, info: pd.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = summary(traj, info)
    info = info.assign(diverged=_diverged(info))
    pairs = sorted({(t, m) for t, m in zip(info.task, info.model)})
    lams = sorted(info.istar_lambda.unique())
    colour = _lambda_colours(lams)
    written = []

    # (a) performance against IsoScore*, one point per lambda: training accuracy, and the task loss (accuracy saturates
    # on most tasks, the loss does not)
    written += lambda_points_figure(table, "isoscore_star", ("accuracy", "loss"), "IsoScore* (final)",
                                    ("training accuracy (final)", "task loss (final)"),
                                    "I-STAR sweep: performance against IsoScore* (mean ± std over seeds)", out_dir / "istar_performance")

    complete = info.loc[~info["diverged"], ["task", "model", "istar_lambda", "seed"]]
    t = traj.merge(complete, on=["task", "model", "istar_lambda", "seed"])
    mean = t.groupby(["task", "model", "istar_lambda", "step"])[["silhouette", "isoscore"]].mean().reset_index()

    # (b) silhouette and IsoScore across training, one curve per lambda
    fig, axes = _grid(2, len(pairs), 5.6)
    for j, (task, model) in enumerate(pairs):
        for lam, m in mean[(mean.task == task) & (mean.model == model)].groupby("istar_lambda"):  # a task's own weights
            for i, col in enumerate(("silhouette", "isoscore")):
                axes[i, j].plot(m["step"], m[col], color=colour[lam], lw=1.2, label=f"λ={lam:g}")
        axes[0, j].set_title(f"{task} x {model}")
        axes[1, j].set_xlabel("update")
        axes[0, j].set_ylabel("silhouette")
        axes[1, j].set_ylabel("IsoScore")
        for i in range(2):
            axes[i, j].grid(alpha=0.3)
        axes[0, j].legend(fontsize=6)
    fig.suptitle("I-STAR sweep: silhouette and IsoScore across training (seed means)", fontsize=10)
    written += _save(fig, out_dir / "istar_curves")
    plt.close(fig)

    # (c) silhouette against IsoScore, one curve per lambda
    written += lambda_curves_figure(mean, "step", "IsoScore", "silhouette", "I-STAR sweep: silhouette against IsoScore during "
                                    "training (dot: end of training)", out_dir / "istar_silhouette_vs_isoscore")
    return written
