"""From trajectories of all seeds to the paper's tables (its figures: :mod:`.figures`).

* **Correlations** between IsoScore and silhouette over training: Pearson r and Spearman ρ per run and on the
  seed-mean curve, per task × model (the paper's main table; its GLUE Table 3), counted over updates 1..N (after every
  update) and over 0..N (the pretrained state too, as the paper's numbers imply: the ``_from_0`` columns); the
  per-run r's mean, std and 95 % t-interval over the seeds (the unit of replication of a claim about training).
* **Sizes** (Tables 1–2): N items (distinct embeddings) and N params
  (items × d + classifier weights and bias) per task × model.
* **Figures**: :mod:`isoflow.optimize.figures`.
* **Label-centred IsoScore** (runs made with ``label_centred_every``): the classified points' global
  IsoScore against their IsoScore after subtracting each label cluster's mean, and S_intra within
  classes, at the pretrained state and at the last measured update (seed means): does the space within
  each class stay isotropic while training collapses global isotropy (Cai et al. 2021's question)?
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..records import aggregate, load_aggregate, load_runs
from ..reporting import write_table
from ..reporting.significance import correlation_interval
from . import paper
from .figures import figures
from .runs import discover


def load_trajectories(results: str | os.PathLike = "results") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every complete optimisation run under ``results`` (interactive use; the workflow names its runs):
    (tidy per-step frame, one row of run info per run). Runs that differ in anything but the seed are an error."""
    return load_runs(discover(results))


def correlation(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(Pearson r, Spearman ρ); NaN for a constant series."""
    from scipy.stats import pearsonr, spearmanr

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    return float(pearsonr(x, y).statistic), float(spearmanr(x, y).statistic)


# Which measurements a correlation runs over. The paper says "after every update" (updates 1..N), but its numbers
# are met most closely with the pretrained state (update 0) counted too: both are reported, 1..N first.
CONVENTIONS = {"": 1, "_from_0": 0}  # column suffix -> the first update counted


def _pair(g: pd.DataFrame) -> tuple[float, float]:
    return correlation(g["isoscore"].to_numpy(), g["silhouette"].to_numpy())


def correlations(traj: pd.DataFrame, info: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per run, per task × model), in both conventions (:data:`CONVENTIONS`): ``pearson_r`` over updates 1..N (after
    each update), ``pearson_r_from_0`` over 0..N (the pretrained state too); the same for ρ and the paper's
    differences."""
    runs = []
    for (task, model, seed), g in traj.groupby(["task", "model", "seed"], sort=True):
        row = {"task": task, "model": model, "seed": seed, "steps": int(g["step"].max())}
        for suffix, first in CONVENTIONS.items():
            row[f"pearson_r{suffix}"], row[f"spearman_rho{suffix}"] = _pair(g[g["step"] >= first])
        runs.append(row)
    runs = pd.DataFrame(runs)
    summary = []
    for (task, model), g in traj.groupby(["task", "model"], sort=True):
        mean = g.groupby("step")[["isoscore", "silhouette"]].mean()
        per = runs[(runs.task == task) & (runs.model == model)]
        steps = int(mean.index.max())
        row = {"task": task, "model": model, "seeds": len(per), "steps": steps}
        for suffix, first in CONVENTIONS.items():
            r, rho = _pair(mean[mean.index >= first])
            row[f"pearson_r{suffix}"], row[f"spearman_rho{suffix}"] = r, rho
            row[f"pearson_r_runs_mean{suffix}"] = per[f"pearson_r{suffix}"].mean()
            row[f"pearson_r_runs_std{suffix}"] = per[f"pearson_r{suffix}"].std() if len(per) > 1 else float("nan")
            # the seed is the unit of the paper's claim (r < 0 for this training): a 95 % interval over the runs, on
            # Fisher's z (r is bounded: a t-interval on r itself can pass ±1)
            interval = correlation_interval(per[f"pearson_r{suffix}"].to_numpy())
            row[f"pearson_r_runs_ci_low{suffix}"] = interval["low"]
            row[f"pearson_r_runs_ci_high{suffix}"] = interval["high"]
            row[f"spearman_rho_runs_mean{suffix}"] = per[f"spearman_rho{suffix}"].mean()
        row["max_std_over_seeds"] = std_over_seeds(g[g["step"] >= 1]).max().max() if len(per) > 1 else float("nan")
        paper_row = paper_columns(task, model, row["pearson_r"], row["spearman_rho"], steps)
        paper_row["delta_r_from_0"] = row["pearson_r_from_0"] - paper_row["paper_pearson_r"]
        summary.append({**row, **paper_row, "commits": _commits(info, task, model)})
    return runs, pd.DataFrame(summary)


def std_over_seeds(after: pd.DataFrame, ddof: int = 1) -> pd.DataFrame:
    """The standard deviation over seeds of IsoScore and of the silhouette (the raw metrics, not log-normalised) at
    each step of one task × model's runs: one row per step, one column per metric. ``ddof`` 1: the sample std
    (pandas'); 0: NumPy's default. The paper names neither the quantity nor ddof."""
    return after.groupby("step")[["isoscore", "silhouette"]].std(ddof=ddof)


def seed_spread(traj: pd.DataFrame) -> pd.DataFrame:
    """How much the seeds disagree, per task × model with at least two seeds, as the paper states it for its main
    tasks (Sec. 3.2, Fig. 2b, 5 seeds: "maximum at any step < 0.0054, on average < 0.0008"): the std over seeds of
    each metric at each update 1..N, its maximum (and the update where it is) and mean over updates, and both over
    the two metrics; beside the paper's bounds where the row is one of its main tasks, with whether ours is below both
    and at how many updates either metric's std reaches the paper's maximum."""
    rows = []
    for (task, model), g in traj[traj["step"] >= 1].groupby(["task", "model"], sort=True):
        seeds = g["seed"].nunique()
        if seeds < 2:
            continue
        std = std_over_seeds(g)
        std0 = std_over_seeds(g, ddof=0)
        bounds = paper.MAIN_SPREAD_BELOW if paper.main_row(task) else None
        row = {"task": task, "model": model, "seeds": seeds, "steps": int(std.index.max())}
        for metric in ("isoscore", "silhouette"):
            row[f"{metric}_max_std"] = float(std[metric].max())
            row[f"{metric}_max_at"] = int(std[metric].idxmax())
            row[f"{metric}_mean_std"] = float(std[metric].mean())
        row["max_std_over_seeds"] = float(std.max().max())
        row["mean_std_over_seeds"] = float(std.to_numpy().mean())
        row["max_std_over_seeds_ddof0"] = float(std0.max().max())
        row["mean_std_over_seeds_ddof0"] = float(std0.to_numpy().mean())
        row["paper_seeds"] = paper.MAIN_SEEDS if bounds else None
        row["paper_max_std"] = f"< {bounds['max']}" if bounds else ""
        row["paper_mean_std"] = f"< {bounds['mean']}" if bounds else ""
        for suffix in ("", "_ddof0"):
            row[f"below_paper_bounds{suffix}"] = (
                bool(
                    row[f"max_std_over_seeds{suffix}"] < bounds["max"]
                    and row[f"mean_std_over_seeds{suffix}"] < bounds["mean"]
                )
                if bounds
                else None
            )
        row["updates_at_or_above_paper_max"] = int((std.max(axis=1) >= bounds["max"]).sum()) if bounds else None
        rows.append(row)
    table = pd.DataFrame(rows)
    if len(table):  # a count, blank where the paper gives no bound (not a float NaN printed as 7.2e+02)
        column = "updates_at_or_above_paper_max"
        table[column] = pd.Series([row[column] for row in rows], dtype=object)
    return table


def paper_columns(task: str, model: str, r: float, rho: float, steps: int) -> dict:
    """The paper's r and ρ for this exact row (main tasks: r and the bound ρ < −0.998; GLUE: Table 3), the
    differences, where they come from, and how this row's setup departs from the paper's."""
    if task.startswith("glue/"):
        row = paper.glue_row(task, model)
        pr, prho = row if row else (float("nan"), float("nan"))
        source = paper.GLUE_SOURCE["correlations"] if row else ""
        rho_text = f"{prho:.4f}" if row else ""
    else:
        row = paper.main_row(task)
        pr = row["pearson_r"] if row else float("nan")
        prho = float("nan")
        source = paper.MAIN_SOURCE["pearson_r"] if row else ""
        rho_text = f"< {paper.MAIN_SPEARMAN_BELOW}" if row else ""
    return {
        "paper_pearson_r": pr,
        "delta_r": r - pr,
        "paper_spearman_rho": rho_text,
        "delta_rho": rho - prho if not np.isnan(prho) else float("nan"),
        "paper_source": source,
        "setup": paper.setup(task, model, steps),
    }


def _commits(info: pd.DataFrame | None, task: str, model: str) -> str:
    """The code commits the runs of this row came from ("+dirty": the tree had uncommitted changes)."""
    if info is None or "git_commit" not in info:
        return ""
    rows = info[(info.task == task) & (info.model == model)]
    return ",".join(
        sorted(
            {
                str(c)[:10] + ("+dirty" if d is True or str(d) == "True" else "")
                for c, d in zip(rows["git_commit"], rows["git_dirty"])
                if isinstance(c, str)
            }
        )
    )


def sizes(info: pd.DataFrame) -> pd.DataFrame:
    """Tables 1–2: N items and N params per task × model (identical across seeds), beside the paper's (its "N.
    items" counts examples: SNLI's 9,842 pairs), with the differences."""
    cols = ["task", "model", "n_items", "n_examples", "dim", "n_labels", "n_params"]
    table = info[cols].drop_duplicates(["task", "model"]).sort_values(["task", "model"]).reset_index(drop=True)
    paper_items, paper_params, setups = [], [], []
    for task, model in zip(table.task, table.model):
        if task.startswith("glue/"):
            paper_items.append(paper.GLUE_ITEMS.get(task.removeprefix("glue/")))
            paper_params.append(paper.glue_params(task, model))
        else:
            row = paper.main_row(task)
            paper_items.append(row["n_items"] if row else None)
            paper_params.append(row["n_params"] if row and row["model"] == model else None)
        setups.append(paper.setup(task, model, paper.PAPER_STEPS["glue" if task.startswith("glue/") else "main"]))
    table["paper_n_items"] = pd.array(paper_items, dtype="Int64")
    table["delta_n_items"] = table["n_examples"] - table["paper_n_items"]
    table["paper_n_params"] = pd.array(paper_params, dtype="Int64")
    table["delta_n_params"] = table["n_params"] - table["paper_n_params"]
    table["setup"] = setups
    return table


LABEL_CENTRED = ("isoscore_classified", "isoscore_label_centred", "s_intra_label")


def label_centred_summary(traj: pd.DataFrame) -> pd.DataFrame:
    """Per task × model, seed means at the first and the last update where the label-centred metrics were measured.

    Columns: ``<metric>_start``, ``<metric>_end`` for the global IsoScore of the classified points, their
    label-centred IsoScore and S_intra within classes, and the end/start ratio of both IsoScores. Empty if no run
    measured them."""
    measured = traj.dropna(subset=["isoscore_label_centred"]) if "isoscore_label_centred" in traj else traj.iloc[:0]
    rows = []
    for (task, model), m in measured.groupby(["task", "model"], sort=True):
        curve = m.groupby("step")[list(LABEL_CENTRED)].mean()
        start, end = curve.iloc[0], curve.iloc[-1]
        row = {
            "task": task,
            "model": model,
            "seeds": m["seed"].nunique(),
            "first_step": int(curve.index[0]),
            "last_step": int(curve.index[-1]),
        }
        for name in LABEL_CENTRED:
            row[f"{name}_start"], row[f"{name}_end"] = start[name], end[name]
        row["isoscore_classified_ratio"] = end["isoscore_classified"] / start["isoscore_classified"]
        row["isoscore_label_centred_ratio"] = end["isoscore_label_centred"] / start["isoscore_label_centred"]
        rows.append(row)
    return pd.DataFrame(rows)


# Correlations to four decimals: the paper's spread bounds (std < 0.0054, mean < 0.0008) and the distance to its
# values are read in the fourth.
CORRELATION_FORMAT = "%.4f"


def tables(traj: pd.DataFrame, info: pd.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    """Correlation tables (main tasks; GLUE) and Tables 1-2 as CSV, Markdown and LaTeX; returns the paths written."""
    out_dir = Path(out_dir)
    runs, summary = correlations(traj, info)
    glue = summary["task"].str.startswith("glue/")
    written = []
    written += write_table(
        runs,
        out_dir / "correlations_per_run",
        caption=(
            "Pearson r and Spearman ρ between IsoScore and silhouette, per run: over updates 1..N (after every update, "
            "as the paper words it) and over 0..N (the pretrained state counted too: _from_0)."
        ),
    )
    if (~glue).any():
        written += write_table(
            summary[~glue].reset_index(drop=True),
            out_dir / "correlations",
            caption=(
                "IsoScore vs silhouette over training, seed-mean curves, and per run (mean, std and 95 % t-interval "
                "over the seeds: runs_ci_low/high), over updates 1..N and over 0..N (the pretrained state counted too: "
                "_from_0; delta_r_from_0), beside "
                f"the paper's value for the same row ({paper.SOURCE}: Sec. 3.2; Spearman ρ there: "
                f"always below {paper.MAIN_SPEARMAN_BELOW}); setup: how the row departs from the paper's; commits: the "
                "code the runs came from."
            ),
            floatfmt=CORRELATION_FORMAT,
        )
    if glue.any():
        written += write_table(
            summary[glue].reset_index(drop=True),
            out_dir / "correlations_glue",
            caption=(
                "GLUE (Appendix A): IsoScore vs silhouette over training, seed-mean curves, and per run (mean, std and "
                "95 % t-interval over the seeds), over updates 1..N and 0..N (_from_0), beside the paper's Table 3 "
                "value for the same task and model, with the differences; commits: the code the runs came from."
            ),
            floatfmt=CORRELATION_FORMAT,
        )
    spread = seed_spread(traj)
    if len(spread):
        written += write_table(
            spread,
            out_dir / "seed_spread",
            caption=(
                "How much the seeds disagree: the standard deviation over seeds (ddof = 1; _ddof0: NumPy's default, "
                "the paper names neither) of IsoScore and of the silhouette (the raw metrics, not the log-normalised "
                "IsoScore of the paper's Fig. 2b) at each update 1..N, its maximum (max_at: the update where it is) "
                "and its mean over updates, and both over the two metrics; beside the paper's bounds for its main "
                f"tasks ({paper.SOURCE}: {paper.MAIN_SPREAD_SOURCE}, {paper.MAIN_SEEDS} seeds; the paper gives no "
                "spread for its GLUE rows), with the number of updates where either metric's std is at or above the "
                "paper's maximum."
            ),
            floatfmt="%.2g",
        )
    centred = label_centred_summary(traj)
    if len(centred):
        written += write_table(
            centred,
            out_dir / "label_centred",
            caption=(
                "Global vs label-centred IsoScore of the classified points (the silhouette's), and S_intra within "
                "classes (mean cosine of pairs in the same class), seed means at the pretrained state and the last "
                "measured update; ratio: end / start. Cai et al. (2021): a space anisotropic as a whole can be nearly "
                "isotropic within its clusters."
            ),
            floatfmt="%.4g",
        )
    size = sizes(info)
    is_glue = size["task"].str.startswith("glue/")
    if (~is_glue).any():
        written += write_table(
            size[~is_glue].reset_index(drop=True),
            out_dir / "table1_sizes",
            caption=(
                "Table 1: items (distinct embeddings), examples and trainable parameters, beside the paper's Table 1 "
                "(its N. items counts examples: SNLI's pairs) with the differences."
            ),
            floatfmt="%.0f",
        )
    if is_glue.any():
        written += write_table(
            size[is_glue].reset_index(drop=True),
            out_dir / "table2_sizes_glue",
            caption=(
                "Table 2: GLUE items, examples and trainable parameters, beside the paper's Table 2 (N. items: "
                "examples) with the differences."
            ),
            floatfmt="%.0f",
        )
    return written


def analyze(results: str | os.PathLike = "results", out: str | os.PathLike | None = None, runs=None) -> list[Path]:
    """Aggregate, tables and figures in one go: ``out/{aggregate,tables,figures}`` (``out`` defaults to the optimize
    section's folder, ``results/optimize``), as `isoflow optimize-aggregate` and `isoflow optimize-report` make them.

    ``runs``: the run records to use (default: every complete optimisation run under ``results``)."""
    out = Path(out or Path(results) / "optimize")
    written = aggregate(discover(results) if runs is None else runs, out / "aggregate")
    # Read back what was written (not the in-memory frames): exactly the workflow's aggregate -> tables path.
    traj, info = load_aggregate(out / "aggregate")
    return written + tables(traj, info, out / "tables") + figures(traj, out / "figures")
