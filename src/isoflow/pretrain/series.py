"""A pretraining run's checkpoint series: the model as it was at a log-spaced schedule of steps, each an ordinary model
folder (``save_pretrained``: every command loads it by path) with a record of where in training it was.

The schedule and the series' layout are :mod:`isoflow.checkpoints` (Pythia's shape scaled to the run's steps). Each
checkpoint is ``checkpoints/step<N>/`` in the run's model folder: the model and
its tokenizer, and ``checkpoint.json`` — the step, the tokens seen, the mean training loss since the previous
checkpoint and the held-out scores at that step (the run evaluates at every checkpoint step too)."""

from __future__ import annotations

import json
from pathlib import Path

from ..checkpoints import step_folder

RECORD = "checkpoint.json"


def write_checkpoint(series: Path, step: int, model, tokenizer, record: dict) -> Path:
    """One checkpoint, written whole or not at all (a folder that takes its place once complete)."""
    from ..atomic import atomic_dir

    with atomic_dir(step_folder(series, step), kind="pretraining checkpoint") as tmp:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / RECORD).write_text(json.dumps(record, indent=2, default=float) + "\n")
    return step_folder(series, step)
