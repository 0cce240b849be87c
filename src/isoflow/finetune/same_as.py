"""Is a run the same as its namesake made elsewhere? Two fine-tuning runs of one identity compared bit for bit.

Training amplifies any difference of code, library or summation order (another kind of CPU sums in another order),
so "the same run" is a claim to check, not to assume: a rerun at the sweep's commit and thread count, on the same
kind of CPU, must give every number of the sweep's run exactly (determinism), and a run made again at a later commit
(to write what the first did not keep, e.g. its token states) stands for the first only where it does.
:func:`compare_runs` reads both runs' held-out measurements per epoch (``<stem>.parquet``: every column, lists element
by element, NaN equal to NaN) and training steps (``<stem>.steps.parquet``: loss and penalty per step), and says which
columns differ and by how much, how many held-out predictions differ per epoch, which settings differ (a setting the
other run's code did not have counts as differing), and both runs' code commits, thread counts and machines.
``identical``: every measurement both runs recorded and every step equal (a measurement only one run's code makes is
listed apart, ``columns_in_one_only``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..records import cpu_kind_label
from ..reporting.frame_difference import frames_difference, provenance_of, settings_differing

IDENTITY = ("task", "model", "seed", "reg", "istar_lambda", "cosreg_weight")  # what must match for a comparison


def compare_runs(run: str | os.PathLike, other: str | os.PathLike) -> dict:
    """``run`` (a record, ``<stem>.json``) against ``other`` of the same identity (module docstring); a JSON-ready
    dict."""
    run, other = Path(run), Path(other)
    a, b = (json.loads(p.read_text()) for p in (run, other))
    mine, theirs = a["settings"], b["settings"]
    differ = [k for k in IDENTITY if mine.get(k) != theirs.get(k)]
    if differ:
        which = ", ".join(f"{k} {theirs.get(k)!r}, not {mine.get(k)!r}" for k in differ)
        raise ValueError(f"{other}: another run than {run} ({which}); compare a run with its namesake")
    epochs = [pd.read_parquet(p.with_suffix(".parquet")) for p in (run, other)]
    steps = [pd.read_parquet(p.with_name(p.stem + ".steps.parquet")) for p in (run, other)]
    measured, trained = frames_difference(*epochs), frames_difference(*steps)
    flips = []
    if measured["rows"][0] == measured["rows"][1] and all("predictions" in e for e in epochs):
        flips = [int((np.asarray(x) != np.asarray(y)).sum()) for x, y in zip(*(e["predictions"] for e in epochs))]
    return {
        **{k: mine.get(k) for k in IDENTITY},
        "run": str(run),
        "other": str(other),
        "identical": measured["equal"] and trained["equal"],
        "epochs": measured,
        "steps": trained,
        "predictions_differing": flips,
        "settings_differing": settings_differing(mine, theirs),
        "provenance": [provenance_of(a), provenance_of(b)],
    }


CAPTION = (
    "Runs compared with their namesakes made elsewhere (the config's same_as: a rerun at the same commit and thread "
    "count and on the same kind of CPU must be identical; a run made again at a later commit stands for the first "
    "only where it is): identical when every held-out measurement both runs recorded, every epoch, and every training "
    "step's loss and penalty are equal bit for bit; "
    "predictions_differing: held-out predictions that differ, per epoch (0 = before training); columns_differing: the "
    "measurements that differ, with the largest absolute difference among them; settings_differing: settings either "
    "record holds with another value (or the other lacks); each run's code commit, thread count and CPU (machines: the "
    "run's, then the other's; float kernels sum in another order on another kind of CPU)."
)


def same_as_table(paths) -> pd.DataFrame:
    """One row per comparison file (:func:`compare_runs`'s, written by ``isoflow finetune-same-as``)."""
    rows = []
    for path in paths:
        c = json.loads(Path(path).read_text())
        differing = {**c["epochs"]["columns_differing"], **c["steps"]["columns_differing"]}
        rows.append(
            {
                "task": c["task"],
                "model": c["model"],
                "reg": c["reg"],
                "weight": c["istar_lambda"] if c["reg"] == "istar" else c["cosreg_weight"],
                "seed": c["seed"],
                "identical": c["identical"],
                "predictions_differing": " ".join(map(str, c["predictions_differing"])),
                "columns_differing": " ".join(sorted(differing)),
                "largest_difference": max(differing.values(), default=0.0),
                "settings_differing": " ".join(c["settings_differing"]),
                "commits": " ".join(str(p["git_commit"])[:7] for p in c["provenance"]),
                "threads": " ".join(str(p["threads"]) for p in c["provenance"]),
                "machines": " | ".join(cpu_kind_label(p.get("machine")) for p in c["provenance"]),
            }
        )
    table = pd.DataFrame(rows)
    return table if table.empty else table.sort_values(["task", "model", "reg", "weight", "seed"])
