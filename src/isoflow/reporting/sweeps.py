"""The summary of a λ sweep (I-STAR in the optimisation experiment, and fine-tuning): one row per task × model × λ,
final values averaged over the seeds that did not diverge; diverged runs are counted, never averaged."""

from __future__ import annotations

import numpy as np
import pandas as pd

RUN = ["task", "model", "istar_lambda", "seed"]


def diverged(info: pd.DataFrame) -> pd.Series:
    """Whether each run (a row of runs.csv) diverged. runs.csv holds True/False, or nothing for runs recorded before
    the column existed (read as NaN: not diverged)."""
    if "diverged" not in info:
        return pd.Series(False, index=info.index)
    return info["diverged"].map(lambda v: str(v).lower() in ("true", "1", "1.0"))


def finals(states: pd.DataFrame, info: pd.DataFrame, order: str) -> pd.DataFrame:
    """One row per run that did not diverge: its last recorded state (the largest ``order``: step or epoch)."""
    ok = info.loc[~diverged(info), RUN]
    last = states.sort_values(order).groupby(RUN, as_index=False).tail(1)
    return last.merge(ok, on=RUN)


def lambda_summary(states: pd.DataFrame, info: pd.DataFrame, *, order: str, length: str, columns) -> pd.DataFrame:
    """Per task × model × λ: ``seeds`` (runs that finished), ``diverged`` (runs that did not), ``length`` (the most
    steps or epochs any run was set to), then ``<column>_mean`` and ``<column>_std`` over the finished runs' last
    states (std NaN for a single run)."""
    final = finals(states, info, order)
    flags = diverged(info)
    rows = []
    for (task, model, lam), runs in info.assign(diverged=flags).groupby(["task", "model", "istar_lambda"], sort=True):
        row = {"task": task, "model": model, "lambda": lam, "seeds": int((~runs["diverged"]).sum()),
               "diverged": int(runs["diverged"].sum()), length: int(runs[length].max())}
        f = final[(final.task == task) & (final.model == model) & (final.istar_lambda == lam)]
        for col in columns:
            row[f"{col}_mean"] = f[col].mean() if len(f) else np.nan
            row[f"{col}_std"] = f[col].std() if len(f) > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)
