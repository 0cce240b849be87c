"""The summary of a sweep over regularisation weights (I-STAR in the optimisation experiment, and fine-tuning): one
row per task × model × weight, final values averaged over the seeds that did not diverge; diverged runs are counted,
never averaged."""

from __future__ import annotations

import numpy as np
import pandas as pd

KEY = ("task", "model", "istar_lambda")


def diverged(info: pd.DataFrame) -> pd.Series:
    """Whether each run (a row of runs.csv) diverged. runs.csv holds True/False, or nothing for runs recorded before
    the column existed (read as NaN: not diverged)."""
    if "diverged" not in info:
        return pd.Series(False, index=info.index)
    return info["diverged"].map(lambda v: str(v).lower() in ("true", "1", "1.0"))


def finals(states: pd.DataFrame, info: pd.DataFrame, order: str, key=KEY) -> pd.DataFrame:
    """One row per run that did not diverge: its last recorded state (the largest ``order``: step or epoch)."""
    run = [*key, "seed"]
    ok = info.loc[~diverged(info), run]
    last = states.sort_values(order).groupby(run, as_index=False).tail(1)
    return last.merge(ok, on=run)


def lambda_summary(
    states: pd.DataFrame, info: pd.DataFrame, *, order: str, length: str, columns, key=KEY
) -> pd.DataFrame:
    """Per ``key`` (task × model × weight): ``seeds`` (runs that finished), ``diverged`` (runs that did not),
    ``length`` (the most steps or epochs any run was set to), then ``<column>_mean`` and ``<column>_std`` over the
    finished runs' last states (std NaN for a single run)."""
    key = list(key)
    final = finals(states, info, order, key)
    rows = []
    for values, runs in info.assign(diverged=diverged(info)).groupby(key, sort=True):
        row = dict(zip(key, values))
        row.update(
            seeds=int((~runs["diverged"]).sum()),
            diverged=int(runs["diverged"].sum()),
            **{length: int(runs[length].max())},
        )
        f = final.loc[(final[key] == pd.Series(dict(zip(key, values)))).all(axis=1)]
        for col in columns:
            row[f"{col}_mean"] = f[col].mean() if len(f) else np.nan
            row[f"{col}_std"] = f[col].std() if len(f) > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def paired_with_plain(
    states: pd.DataFrame, info: pd.DataFrame, *, order: str, columns, key=KEY, plain: str = "istar_lambda"
) -> pd.DataFrame:
    """Per ``key`` whose ``plain`` weight is not 0: each column's last state paired with the plain run (weight 0) of the
    same task, model and seed — ``<column>_diff`` (mean over seeds), ``_diff_std`` and the 95 % t-interval
    ``_diff_ci_low``/``_diff_ci_high`` (:func:`isoflow.reporting.significance.seed_interval`; NaN with one seed) —
    and ``paired_seeds``. The seed is the unit: a claim about the training procedure is read on these."""
    from .significance import PAIRED_SUFFIXES, paired_columns

    key = list(key)
    final = finals(states, info, order, key)
    base = final[final[plain] == 0]
    rows = []
    for values, runs in final[final[plain] != 0].groupby(key, sort=True):
        row = dict(zip(key, values))
        group = [k for k in key if k != plain]
        same = base.loc[(base[group] == runs.iloc[0][group]).all(axis=1)].set_index("seed")
        both = runs.set_index("seed").join(same[list(columns)], rsuffix="_plain", how="inner")
        row["paired_seeds"] = len(both)
        for col in columns:
            row.update(paired_columns(col, (both[col] - both[f"{col}_plain"]).to_numpy()))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*key, "paired_seeds", *(f"{c}_{s}" for c in columns for s in PAIRED_SUFFIXES)])
