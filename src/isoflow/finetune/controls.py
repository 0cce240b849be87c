"""The controls every fine-tuning table carries (a reviewer's three questions):

1. **Does the model beat a bag of words?** The TF-IDF + logistic-regression baseline on the same training and
   held-out examples (:mod:`isoflow.finetune.baseline`), a row of its own.
2. **Was the epoch chosen on the reported data?** Each run's epoch is the one of its best validation metric (a split
   carved from the training data) where the run has one; runs made before that split existed are read at their last
   epoch, and the table says so.
3. **Does the procedure change the metric?** The seed is the unit: each run minus the plain run (λ = 0) of the same
   seed, at the selected epoch and after the last, with the 95 % t-interval over seeds, its p and the smallest mean
   difference the seeds could detect (80 % power at the observed spread: :func:`~isoflow.reporting.significance.
   detectable_effect`) — the table's leading comparison.
   **Do these trained instances differ on the same sentences?** McNemar's exact test on the held-out examples, each
   run paired with the plain run of the same seed, the seeds' discordant counts pooled
   (:mod:`isoflow.reporting.significance`), Holm-adjusted over the comparisons of one task × model (their number is a
   column): a description of the trained classifiers, not a test of the procedure (its sentences are not independent
   draws of training); the same seed by seed in a table of its own (:func:`mcnemar_by_seed`). Runs that did not
   record their predictions get no test.
4. **Does the penalty pull at all?** Where the workflow measured it (``finetune.gradient_batches``), the task loss's
   and the penalty's gradient norms at the pretrained model (:mod:`isoflow.finetune.diagnosis`), a table of their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting.significance import detectable_effect, discordant, holm, mcnemar, paired_over_seeds, seed_interval
from .runs import BASELINE, BASELINE_FILES, GRADIENTS_FILE, SAME_AS, SEED_FLOOR_FILE
from .settings import REGULARISERS

GRADIENTS_CAPTION = (
    "The I-STAR penalty's pull against the task's at the pretrained model (isoflow finetune-diagnosis): per setup, the "
    "median over batches of 32 training sentences of the gradient norm (w.r.t. the encoder's weights) of the task "
    "loss and of 1 − IsoScore* (λ = 1; the ratio scales with |λ|), their ratio, and 1 − IsoScore* itself (0: "
    "isotropic, 1: all variance in one direction). I-STAR's setup: its head on the pooled output, the penalty on "
    "every layer's token states."
)
SELECTED_BY_VALIDATION = "best validation epoch"
SELECTED_LAST = "last epoch (no validation split)"


def split_inputs(paths) -> tuple[list[Path], list[Path], list[Path], list[Path], list[Path]]:
    """(run records, baseline records, gradient records, seed floors, comparisons with namesakes) among the report's
    inputs: baselines are named ``bag-of-words.json`` (or ``bag-of-words-all-training.json``), a task × model's
    gradients at its pretrained model ``gradients.json``, a weight's CKA between its seeds ``cka-between-seeds.json``,
    a run compared with its namesake elsewhere ``same-as-seed<S>.json``."""
    paths = [Path(p) for p in paths]
    of = lambda *names: [p for p in paths if p.name in names]  # noqa: E731
    same_as = [p for p in paths if p.name.startswith(f"{SAME_AS}-")]
    runs = [p for p in paths if p.name not in (*BASELINE_FILES, GRADIENTS_FILE, SEED_FLOOR_FILE) and p not in same_as]
    return runs, of(*BASELINE_FILES), of(GRADIENTS_FILE), of(SEED_FLOOR_FILE), same_as


def _selected(record: Path) -> dict:
    """One run at its selected epoch: its settings, the epoch and how it was chosen, the held-out metric, and which
    held-out examples it classified correctly (None without recorded predictions)."""
    info = json.loads(record.read_text())
    epochs = pd.read_parquet(record.with_suffix(".parquet"))
    s = info["settings"]
    if "validation_metric" in epochs and epochs["validation_metric"].notna().any():
        row, how = epochs.loc[epochs["validation_metric"].idxmax()], SELECTED_BY_VALIDATION  # ties: the earliest
    else:
        row, how = epochs.iloc[-1], SELECTED_LAST
    labels = info.get("heldout_labels")
    correct = None
    if labels is not None and "predictions" in epochs:
        correct = np.asarray(row["predictions"]) == np.asarray(labels)
    weight = s.get(REGULARISERS[s.get("reg", "istar")], 0.0)
    last = epochs.iloc[-1]
    return {
        "task": s["task"],
        "model": s["model"],
        "reg": s.get("reg", "istar"),
        "weight": float(weight),
        "seed": int(s["seed"]),
        "epoch": int(row["epoch"]),
        "selection": how,
        "metric_name": row["metric_name"],
        "metric": float(row["metric"]),
        "metric_last": float(last["metric"]),
        "accuracy": float(row["accuracy"]),
        "n_train": info.get("n_train"),
        "correct": correct,
        "diverged": bool(info.get("diverged")),
    }


def selected_runs(records) -> pd.DataFrame:
    """One row per run that did not diverge, read at its selected epoch (module docstring, 2): what the controls and
    the per-seed tests read."""
    runs = pd.DataFrame([_selected(Path(r)) for r in records])
    return runs[~runs["diverged"]]


def mcnemar_by_seed(runs: pd.DataFrame) -> pd.DataFrame:
    """McNemar's exact test of each run against the plain run (λ = 0) of its seed on the same held-out examples, seed
    by seed (``runs``: :func:`selected_runs`), Holm-adjusted over every test of its task × model: whether one pair of
    trained classifiers differs on these sentences, which the pooled test of the controls table cannot say of any one
    seed. Runs without recorded predictions get no row."""
    rows = []
    for r in runs[runs.weight != 0].itertuples():
        plain = runs[(runs.task == r.task) & (runs.model == r.model) & (runs.weight == 0) & (runs.seed == r.seed)]
        if r.correct is None or plain.empty or plain["correct"].iloc[0] is None:
            continue
        b, c = discordant(plain["correct"].iloc[0], r.correct)
        rows.append(
            {"task": r.task, "model": r.model, "reg": r.reg, "weight": r.weight, "seed": r.seed, "epoch": r.epoch,
             "better": b, "worse": c, "examples": len(r.correct), "p": mcnemar(b, c)}
        )  # fmt: skip
    table = pd.DataFrame(rows, columns=MCNEMAR_COLUMNS[:-1])
    table["p_holm"] = np.nan
    for _, index in table.groupby(["task", "model"]).groups.items():
        table.loc[index, "p_holm"] = holm(table.loc[index, "p"])
    return table


MCNEMAR_COLUMNS = ["task", "model", "reg", "weight", "seed", "epoch", "better", "worse", "examples", "p", "p_holm"]
MCNEMAR_CAPTION = (
    "McNemar's exact test seed by seed: each run against the plain run (lambda = 0) of the same seed on the same "
    "held-out examples at the run's selected epoch (better: right where the plain run is wrong; worse: the reverse), "
    "Holm-adjusted over every test of the task × model. It describes one pair of trained classifiers; the seed-level "
    "interval of finetune_controls is the test of the procedure. Empty: runs without recorded predictions."
)


def controls_table(runs: pd.DataFrame, baselines=()) -> pd.DataFrame:
    """One row per task × model × regulariser × weight (and one per task for the baseline): the selected epochs, the
    held-out metric (mean and std over seeds), and the paired test against the plain run (module docstring);
    ``runs``: :func:`selected_runs` of the records."""
    rows = []
    for (task, model, reg, weight), group in runs.groupby(["task", "model", "reg", "weight"], sort=True):
        plain = runs[(runs.task == task) & (runs.model == model) & (runs.weight == 0)].set_index("seed")
        row = {
            "task": task,
            "model": model,
            "reg": reg,
            "weight": weight,
            "seeds": len(group),
            "n_train": _one(group["n_train"]),
            "selection": "; ".join(sorted(set(group["selection"]))),
            "epochs": " ".join(str(e) for e in group.sort_values("seed")["epoch"]),
            "metric_name": group["metric_name"].iloc[0],
            "metric": group["metric"].mean(),
            "metric_std": group["metric"].std() if len(group) > 1 else np.nan,
            "accuracy": group["accuracy"].mean(),
        }
        if weight != 0:
            base = plain[["metric", "metric_last"]].add_suffix("_plain")
            both = group.set_index("seed").join(base, how="inner")
            for when, column in (("selected", "metric"), ("last", "metric_last")):
                over = seed_interval(both[column] - both[f"{column}_plain"])
                row.update(
                    {
                        f"diff_{when}": over["mean"],
                        f"diff_{when}_low": over["low"],
                        f"diff_{when}_high": over["high"],
                        f"p_seeds_{when}": over["p"],
                        f"detectable_{when}": detectable_effect(over["std"], over["seeds"]),
                    }
                )
            pairs = [
                (plain.loc[r.seed, "correct"], r.correct)
                for r in group.itertuples()
                if r.seed in plain.index and r.correct is not None and plain.loc[r.seed, "correct"] is not None
            ]
            if pairs:
                test = paired_over_seeds(pairs)
                row.update(
                    paired_seeds=len(pairs),
                    better=test["b"],
                    worse=test["c"],
                    examples=test["examples"],
                    accuracy_difference=test["accuracy_difference"],
                    p=test["p"],
                )
        rows.append(row)
    table = pd.DataFrame(rows)
    for column in (*SEED_COLUMNS, "paired_seeds", "better", "worse", "examples", "accuracy_difference", "p"):
        if column not in table:
            table[column] = np.nan
    table["comparisons"] = table.groupby(["task", "model"])["p"].transform(lambda p: int(p.notna().sum()))
    table["p_holm"] = np.nan
    for _, index in table.groupby(["task", "model"]).groups.items():
        table.loc[index, "p_holm"] = holm(table.loc[index, "p"])
    extra = []
    for path in baselines:
        b = json.loads(Path(path).read_text())
        extra.append(
            {
                "task": b["task"],
                "model": BASELINE,
                "reg": "tf-idf + logistic regression",
                "weight": np.nan,
                "seeds": 1,
                "n_train": b.get("n_train"),
                "selection": f"C = {b['C']:g} by {b['selection']}",
                "metric_name": b["metric_name"],
                "metric": b["metric"],
                "accuracy": b["accuracy"],
                "examples": b["n_heldout"],
            }
        )
    if extra:
        table = pd.concat([table, pd.DataFrame(extra)], ignore_index=True)
    order = ["task", "model", "reg", "weight", "n_train"]
    table = table.sort_values(order, kind="stable").reset_index(drop=True)
    table["n_train"] = table["n_train"].astype("Int64")  # a count: printed without decimals
    leading = [*order, "seeds", "selection", "epochs", "metric_name", "metric", "metric_std", "accuracy", *SEED_COLUMNS]
    return table[[c for c in leading if c in table] + [c for c in table if c not in leading]]


def _one(values: pd.Series):
    """The runs' common value (their number of training examples), None when they differ or none recorded it."""
    found = set(values.dropna())
    return found.pop() if len(found) == 1 else None


SEED_COLUMNS = [
    column
    for when in ("selected", "last")
    for column in (f"diff_{when}", f"diff_{when}_low", f"diff_{when}_high", f"p_seeds_{when}", f"detectable_{when}")
]
CAPTION = (
    "Controls: each task's bag-of-words baseline (TF-IDF + logistic regression on the same training and held-out "
    "examples; its C chosen on the validation split or by cross-validation on the training data; where the runs "
    "train on a subset, also on every training example); n_train: the training examples; each run "
    "read at its best validation epoch (or its last, where the runs had no validation split: epochs), the held-out "
    "metric's mean and std over seeds. The procedure's effect, the seed as the unit: diff_selected, the mean over "
    "seeds of the run's metric minus the plain run's (lambda = 0, same seed) at the selected epochs, with its 95 % "
    "t-interval over seeds (_low, _high), the t-test's p (p_seeds_) and detectable_, the smallest mean difference "
    "these seeds detect with 80 % power at the observed spread; the same after the last epoch (_last). Describing the "
    "trained instances: McNemar's exact test against the plain run of the same seed on the same held-out examples, "
    "the seeds' discordant examples pooled (better: right where the plain run is wrong; worse: the reverse), "
    "Holm-adjusted over the task × model's comparisons. Empty: runs without recorded predictions."
)


def gradients_table(paths) -> pd.DataFrame:
    """One row per task × model × setup from :data:`GRADIENTS_FILE` records
    (:func:`isoflow.finetune.diagnosis.model_gradients`)."""
    measured = ("task_grad_norm", "penalty_grad_norm", "ratio_penalty_to_task", "one_minus_isoscore_star")
    rows = []
    for path in sorted(map(Path, paths)):
        info = json.loads(path.read_text())
        for setup, g in info["gradients_at_the_pretrained_model"].items():
            row = {"task": info["task"], "model": info["model"], "setup": setup, "batches": info["batches_of_32"]}
            rows.append({**row, **{k: g[k] for k in measured}})
    return pd.DataFrame(rows)
