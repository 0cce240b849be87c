"""The optimize section's figures, from the trajectories of all seeds, one panel per task, mean ± std over seeds:
silhouette across training; log-normalised IsoScore across training, ``log(IsoScore_t / IsoScore_0)`` (0 at the
pretrained state, negative as isotropy is lost; comparable across tasks whose initial IsoScores differ by orders of
magnitude); silhouette against IsoScore; and, for runs made with ``label_centred_every``, the classified points' global
against label-centred IsoScore."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting.figures import legend_below, model_colour, panels, save, suptitle, trajectory


def _grouped(traj: pd.DataFrame, column: str) -> pd.DataFrame:
    return traj.groupby(["task", "model", "step"])[column].agg(["mean", "std"]).reset_index()


def log_normalised_isoscore(traj: pd.DataFrame) -> pd.Series:
    """log(IsoScore_t / IsoScore_0) within each run."""
    first = traj[traj["step"] == 0].set_index(["task", "model", "seed"])["isoscore"]
    base = traj.set_index(["task", "model", "seed"]).index.map(first)
    return np.log(traj["isoscore"].to_numpy() / np.asarray(base, dtype=float))


def figures(traj: pd.DataFrame, out_dir: str | os.PathLike, *, tasks: list[str] | None = None) -> list[Path]:
    """The three figures (four with label-centred runs), one panel per task, as PNG and PDF; returns the paths."""
    traj = traj.copy()
    traj["log_norm_isoscore"] = log_normalised_isoscore(traj)
    tasks = tasks or sorted(traj["task"].unique())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    colour = model_colours(traj)
    written = []
    specs = [
        ("silhouette", "silhouette", "silhouette (w.r.t. labels)", "Silhouette across training"),
        (
            "log_isoscore",
            "log_norm_isoscore",
            "log(IsoScore / IsoScore at step 0)",
            "Log-normalised IsoScore across training",
        ),
    ]
    for name, col, ylabel, title in specs:
        fig, axes = panels(len(tasks), width=3.6, height=2.9)
        for ax, task in zip(axes, tasks):
            g = _grouped(traj[traj.task == task], col)
            for model, m in g.groupby("model"):
                ax.plot(m["step"], m["mean"], label=model, lw=1.4, color=colour[model])
                if m["std"].notna().any():
                    ax.fill_between(
                        m["step"], m["mean"] - m["std"], m["mean"] + m["std"], alpha=0.25, color=colour[model]
                    )
            ax.set_title(task, fontsize=9)
            ax.set_xlabel("update")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        model_legend(fig, colour)
        suptitle(fig, f"{title} (mean ± std over seeds)", fontsize=11)
        written += save(fig, out_dir / name)
    # Silhouette against IsoScore: a line per model (its own colour, in the legend), from the pretrained state (open
    # circle) to the last update (dot).
    fig, axes = panels(len(tasks), width=3.6, height=3.0)
    for ax, task in zip(axes, tasks):
        for model, m in traj[traj.task == task].groupby("model"):
            mean = m.groupby("step")[["isoscore", "silhouette"]].mean()
            trajectory(ax, mean["isoscore"], mean["silhouette"], colour[model], label=model, lw=1.4)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("IsoScore")
        ax.set_ylabel("silhouette")
        ax.grid(alpha=0.3)
    model_legend(fig, colour)
    suptitle(
        fig,
        "Silhouette against IsoScore during training (seed means; open circle: pretrained, dot: last update)",
        fontsize=11,
    )
    written += save(fig, out_dir / "silhouette_vs_isoscore")
    if "isoscore_label_centred" in traj and traj["isoscore_label_centred"].notna().any():
        written += label_centred_figure(traj, out_dir, tasks)
    return written


def model_colours(traj: pd.DataFrame) -> dict:
    """Each model's colour: its own, the same in every figure (isoflow.reporting.figures.model_colour)."""
    return {m: model_colour(m) for m in sorted(traj["model"].unique())}


def model_legend(fig, colour: dict, extra=()) -> None:
    """One legend below the panels: a line per model in its colour (and ``extra`` handles)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, lw=1.6, label=m) for m, c in colour.items()] + list(extra)
    legend_below(fig, handles, fontsize=8)


def label_centred_figure(traj: pd.DataFrame, out_dir: Path, tasks: list[str]) -> list[Path]:
    """Global vs label-centred IsoScore of the classified points across training (the bridge to Cai et al.): a model's
    colour for both, solid for global, dashed for label-centred; the legend below the panels."""
    from matplotlib.lines import Line2D

    measured = traj.dropna(subset=["isoscore_label_centred"])
    tasks = [t for t in tasks if t in set(measured["task"])]
    colour = model_colours(measured)
    fig, axes = panels(len(tasks), width=3.6, height=2.9)
    for ax, task in zip(axes, tasks):
        for model, m in measured[measured.task == task].groupby("model"):
            mean = m.groupby("step")[["isoscore_classified", "isoscore_label_centred"]].mean()
            ax.plot(mean.index, mean["isoscore_classified"], "-", color=colour[model], lw=1.4)
            ax.plot(mean.index, mean["isoscore_label_centred"], "--", color=colour[model], lw=1.4)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("update")
        ax.set_ylabel("IsoScore of the classified points")
        ax.grid(alpha=0.3)
    styles = [
        Line2D([], [], color="0.3", ls="-", label="global"),
        Line2D([], [], color="0.3", ls="--", label="label-centred"),
    ]
    model_legend(fig, colour, styles)
    suptitle(fig, "Global vs label-centred IsoScore across training (seed means)")
    return save(fig, out_dir / "label_centred_isoscore")
