"""Did the penalty do what it was set to do? The fine-tuning sweep's manipulation check, from its run records.

An intervention's effect on the task says something about the intervention only if the intervention happened: I-STAR
at λ > 0 must make the penalty's points more isotropic than plain fine-tuning does, at λ < 0 less. Each run measures
IsoScore* of its penalty's points against the *pretrained* model's Σ_S after every epoch
(``isoscore_star_pretrained``: one fixed reference, so epochs and runs compare), and the penalty's pull (``pull``:
‖∇ λ·(1 − IsoScore*)‖ / ‖∇ task loss‖ on fixed training batches). Per task × model × regulariser × weight, after the
last epoch, against the plain run (λ = 0) of the same seed, over seeds (the seed is the unit,
:func:`isoflow.reporting.significance.seed_interval`):

- ``isoscore_star_pretrained`` before training and after, and the paired difference from the plain run with its 95 %
  interval and p;
- the pull before training and after the last epoch (the median over seeds);
- ``flips_vs_plain``: the share of held-out examples whose prediction differs from the plain run's, the mean over
  seeds — beside the smallest weight's (a perturbation floor: a run that differs by a negligible penalty), it says
  how much of a weight's change in predictions any perturbation of training gives;
- the seed floor of the arm itself: ``flips_between_seeds`` (the share of held-out predictions two of its seeds
  disagree on, the mean over every pair, with the smallest and largest pair) and ``metric_between_seeds`` (the mean
  absolute difference of the held-out metric between two of its seeds) — at λ = 0, what a change of seed alone does to
  predictions and accuracy, against which ``flips_vs_plain`` is read.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..reporting import diverged, rows_where
from ..reporting.significance import seed_interval
from ..reporting.sweeps import finals
from .settings import CONFIGURATION as KEY

# an arm's seed floor (between_seeds)
FLOOR_COLUMNS = ("flips_between_seeds", "flips_between_seeds_min", "flips_between_seeds_max", "metric_between_seeds")
COLUMNS = [
    "task",
    "model",
    "reg",
    "weight",
    "seeds",
    "isoscore_star_pretrained_before",
    "isoscore_star_pretrained_after",
    "vs_plain_diff",
    "vs_plain_low",
    "vs_plain_high",
    "vs_plain_p",
    "pull_before",
    "pull_after",
    "flips_vs_plain",
    *FLOOR_COLUMNS,
]

CAPTION = (
    "The manipulation check: IsoScore* of the penalty's points against the pretrained model's Σ_S (one fixed "
    "reference) before training and after the last epoch (means over seeds), its paired difference from the plain run "
    "(λ = 0) of the same seed with a 95 % t-interval and p over seeds (the seed is the unit), the penalty's pull "
    "(‖∇ penalty‖ / ‖∇ task loss‖, median over seeds) before and after training, and the share of held-out "
    "predictions that differ from the plain run's (mean over seeds); the seed floor: the share two of the arm's own "
    "seeds disagree on (mean, smallest and largest over the pairs) and their held-out metric's mean absolute "
    "difference. Empty: runs made before the check existed."
)


def share_flipped(a, b) -> float:
    """The share of examples whose prediction differs between two runs' held-out predictions (NaN where either run
    recorded none, or other examples)."""
    a, b = np.asarray(a), np.asarray(b)
    return float((a != b).mean()) if len(a) == len(b) and len(a) else float("nan")


def between_seeds(runs: pd.DataFrame) -> dict:
    """The seed floor of one arm's runs (one row per seed, with ``predictions`` and ``metric``): over every pair of
    its seeds, the share of predictions that differ (mean, min, max) and the metric's mean absolute difference.

    >>> runs = pd.DataFrame({"predictions": [[0, 1, 1, 0], [0, 1, 0, 0], [1, 1, 0, 0]], "metric": [0.5, 0.6, 0.8]})
    >>> {k: round(v, 4) for k, v in between_seeds(runs).items()}  # pairs 0-1, 0-2, 1-2: 1, 2 and 1 of 4 differ
    {'flips_between_seeds': 0.3333, 'flips_between_seeds_min': 0.25, 'flips_between_seeds_max': 0.5, \
'metric_between_seeds': 0.2}"""
    pairs = list(itertools.combinations(range(len(runs)), 2))
    if not pairs or "predictions" not in runs:
        return dict.fromkeys(FLOOR_COLUMNS, np.nan)
    flips = [share_flipped(runs["predictions"].iloc[i], runs["predictions"].iloc[j]) for i, j in pairs]
    metric = runs["metric"].to_numpy(dtype=float) if "metric" in runs else np.full(len(runs), np.nan)
    return {
        "flips_between_seeds": float(np.mean(flips)),
        "flips_between_seeds_min": float(np.min(flips)),
        "flips_between_seeds_max": float(np.max(flips)),
        "metric_between_seeds": float(np.mean([abs(metric[i] - metric[j]) for i, j in pairs])),
    }


def manipulation_table(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """One row per task × model × regulariser × weight whose runs measured ``isoscore_star_pretrained`` (empty
    otherwise: runs made before the check existed)."""
    if "isoscore_star_pretrained" not in epochs:
        return pd.DataFrame(columns=COLUMNS)
    run = [*KEY, "seed"]
    finished = info.loc[~diverged(info), run]
    kept = epochs.merge(finished, on=run)
    first = kept[kept.epoch == 0]
    last = finals(epochs, info, "epoch", KEY)
    plain = rows_where(last, istar_lambda=0, cosreg_weight=0)
    rows = []
    for (task, model, reg, lam, w), runs in last.groupby(list(KEY), sort=True):
        base = rows_where(plain, task=task, model=model)
        before = rows_where(first, task=task, model=model, reg=reg, istar_lambda=lam, cosreg_weight=w)
        both = runs.merge(base, on="seed", suffixes=("", "_plain"))
        is_plain = lam == 0 and w == 0
        moved = both["isoscore_star_pretrained"] - both["isoscore_star_pretrained_plain"]
        check = seed_interval([] if is_plain else moved)
        pulls = "pull" in runs and not is_plain
        rows.append(
            {
                "task": task,
                "model": model,
                "reg": reg,
                "weight": lam if reg == "istar" else w,
                "seeds": len(runs),
                "isoscore_star_pretrained_before": before["isoscore_star_pretrained"].mean(),
                "isoscore_star_pretrained_after": runs["isoscore_star_pretrained"].mean(),
                "vs_plain_diff": check["mean"],
                "vs_plain_low": check["low"],
                "vs_plain_high": check["high"],
                "vs_plain_p": check["p"],
                "pull_before": before["pull"].median() if pulls else np.nan,
                "pull_after": runs["pull"].median() if pulls else np.nan,
                "flips_vs_plain": np.nan
                if is_plain
                else np.mean([share_flipped(a, b) for a, b in zip(both["predictions"], both["predictions_plain"])]),
                **between_seeds(runs),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
