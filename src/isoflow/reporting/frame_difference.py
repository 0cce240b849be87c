"""Two tables of one measurement compared column by column: which columns differ, and by how much (absolute and
relative), NaN equal to NaN, text equal as text, lists element by element. What a run compared with its namesake made
elsewhere reads (``isoflow finetune-same-as``, ``isoflow layers-same-as``).

Examples
--------
>>> import pandas as pd
>>> a = pd.DataFrame({"layer": [0, 1], "s_inter": [0.25, 0.5], "lid": [3.0, 4.0], "name": ["x", "y"]})
>>> b = pd.DataFrame({"layer": [0, 1], "s_inter": [0.25, 0.4], "lid": [3.0, float("nan")], "name": ["x", "y"]})
>>> d = frames_difference(a, b)
>>> d["equal"], round(d["columns_differing"]["s_inter"], 6), round(d["relative_differing"]["s_inter"], 6)
(False, 0.1, 0.2)
>>> d["columns_differing"]["lid"], d["nan_differing"]
(0.0, {'lid': 1})
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def column_difference(a: pd.Series, b: pd.Series) -> tuple[bool, float, float, int]:
    """(equal bit for bit, NaN equal to NaN, text equal as text; the largest absolute difference of the numbers; the
    largest relative one, |x − y| / max(|x|, |y|); how many values are NaN on one side only, which neither difference
    counts); both differences NaN where a list's length differs."""
    largest, relative, one_nan, equal = 0.0, 0.0, 0, True
    for x, y in zip(a, b):
        if isinstance(x, str) or isinstance(y, str):
            equal = equal and x == y
            continue
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if x.shape != y.shape:
            return False, float("nan"), float("nan"), one_nan
        differ = ~((x == y) | (np.isnan(x) & np.isnan(y)))
        if differ.any():
            equal = False
            one_nan += int((np.isnan(x) != np.isnan(y)).sum())
            gap = np.abs(x - y)[differ]  # NaN where one side is: nanmax passes over it (counted in one_nan)
            scale = np.maximum(np.abs(x), np.abs(y))[differ]
            largest = max(largest, float(np.nanmax(gap, initial=0.0)))
            relative = max(relative, float(np.nanmax(gap / scale, initial=0.0)))
    return equal, largest, relative, one_nan


def frames_difference(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """Every column both frames hold compared (:func:`column_difference`): ``equal`` (all of them, and as many rows),
    ``columns_differing`` (column: largest absolute difference), ``relative_differing`` (column: largest relative
    difference), ``nan_differing`` (column: values NaN on one side only, where there are any), ``columns_in_one_only``
    (a measurement one side's code made and the other's did not: listed, not a difference) and both row counts."""
    if len(a) != len(b):
        return {"rows": [len(a), len(b)], "equal": False, "columns_differing": {}, "relative_differing": {},
                "nan_differing": {}, "columns_in_one_only": []}  # fmt: skip
    differing, relative, one_nan = {}, {}, {}
    for col in [c for c in a.columns if c in b.columns]:
        equal, largest, rel, nans = column_difference(a[col], b[col])
        if not equal:
            differing[col], relative[col] = largest, rel
            one_nan.update({col: nans} if nans else {})
    in_one = sorted(set(a.columns) ^ set(b.columns))
    return {"rows": [len(a), len(b)], "equal": not differing, "columns_differing": differing,
            "relative_differing": relative, "nan_differing": one_nan, "columns_in_one_only": in_one}  # fmt: skip


def provenance_of(record: dict) -> dict:
    """A run record's code commit, thread count and machine: what a comparison of two runs names beside them."""
    commit = (record.get("code") or {}).get("git_commit")
    return {"git_commit": commit, **{k: record.get(k) for k in ("threads", "machine")}}


def settings_differing(mine: dict, theirs: dict) -> list[str]:
    """The settings two run records hold with other values (one lacking a setting the other has counts)."""
    return sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
