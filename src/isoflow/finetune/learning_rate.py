"""The learning rate chosen for a model on the validation split, before the sweep: a few plain runs (λ = 0, one
seed), one per candidate rate, each read at its best validation epoch; the rate whose best validation metric is
highest wins (a tie: the smaller rate). The held-out set is never read. The choice is a file
(``lr-selection/chosen.json``) that every run of the sweep reads (``isoflow finetune --lr-from``) and records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def best_validation(record: str | os.PathLike) -> tuple[float, int]:
    """(best validation metric, its epoch) of a finished run; a run without a validation split cannot choose."""
    import pandas as pd

    record = Path(record)
    epochs = pd.read_parquet(record.with_suffix(".parquet"))
    if "validation_metric" not in epochs or not epochs["validation_metric"].notna().any():
        raise ValueError(
            f"{record}: the run has no validation split; choose a learning rate with --validation-fraction"
        )
    row = epochs.loc[epochs["validation_metric"].idxmax()]
    return float(row["validation_metric"]), int(row["epoch"])


def choose(records) -> dict:
    """The choice among the candidate runs (module docstring): the rate, and every candidate's best validation metric
    and epoch."""
    scores = {}
    for record in records:
        info = json.loads(Path(record).read_text())
        lr = float(info["settings"]["lr"])
        if info.get("diverged"):
            scores[lr] = {"validation_metric": float("-inf"), "epoch": None, "record": str(record), "diverged": True}
            continue
        value, epoch = best_validation(record)
        scores[lr] = {"validation_metric": value, "epoch": epoch, "record": str(record)}
    if not scores:
        raise ValueError("no candidate runs given")
    lr = max(scores, key=lambda r: (scores[r]["validation_metric"], -r))
    return {
        "lr": lr,
        "chosen_on": "best validation metric of plain runs",
        "candidates": {f"{r:g}": v for r, v in scores.items()},
    }


def chosen_lr(path: str | os.PathLike) -> tuple[float, dict]:
    """(the chosen rate, the whole choice) from a choice file."""
    choice = json.loads(Path(path).read_text())
    return float(choice["lr"]), choice
