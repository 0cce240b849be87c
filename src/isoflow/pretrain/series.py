"""A pretraining run's checkpoint series: the model as it was at a log-spaced schedule of steps, each an ordinary model
folder (``save_pretrained``: every command loads it by path) with a record of where in training it was.

The schedule has Pythia's shape scaled to the run's steps (Biderman et al. 2023: steps 0, 1, 2, 4, …, 512, then every
1,000 to 143,000): step 0, the powers of two below the stride, then ``m`` evenly spaced steps ending at the last, with
the largest ``m`` that keeps the series within ``count`` checkpoints — :func:`checkpoint_steps` (143,000 steps and 154
checkpoints give Pythia's own). Each checkpoint is ``checkpoints/step<N>/`` in the run's model folder: the model and
its tokenizer, and ``checkpoint.json`` — the step, the tokens seen, the mean training loss since the previous
checkpoint and the held-out scores at that step (the run evaluates at every checkpoint step too)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..models.local import CHECKPOINT_SERIES as SERIES  # a model folder's series: <model>/checkpoints/step<N>/

RECORD = "checkpoint.json"


def checkpoint_steps(steps: int, count: int) -> list[int]:
    """The steps a run of ``steps`` steps keeps a checkpoint at, at most ``count`` of them (0: none), ascending; the
    first is 0 and the last ``steps``.

    >>> checkpoint_steps(4000, 20)
    [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 400, 800, 1200, 1600, 2000, 2400, 2800, 3200, 3600, 4000]
    >>> checkpoint_steps(10, 4)   # too few for the whole shape: the first powers of two, then the last step
    [0, 1, 2, 10]"""
    if count == 0:
        return []
    if count < 2:
        raise ValueError(f"a checkpoint series has at least 2 checkpoints (the first and the last step); got {count}")

    def powers_below(stride: float) -> list[int]:
        return [2**k for k in range(int(math.log2(stride)) + 1) if 2**k < stride] if stride > 1 else []

    best = None
    for m in range(1, min(count, steps) + 1):
        chosen = sorted({0, *powers_below(steps / m), *(round(steps * i / m) for i in range(1, m + 1))})
        if len(chosen) <= count:
            best = chosen
    # Too few for the whole shape even with one stride: the first powers of two, then the last step
    return best or sorted({0, *powers_below(steps)[: count - 2], steps})


def step_folder(series: str | Path, step: int) -> Path:
    """``<series>/step<N>``: named as Pythia's hub revisions are (``step1000``)."""
    return Path(series) / f"step{step}"


def write_checkpoint(series: Path, step: int, model, tokenizer, record: dict) -> Path:
    """One checkpoint, written whole or not at all (a folder that takes its place once complete)."""
    from ..atomic import atomic_dir

    with atomic_dir(step_folder(series, step), kind="pretraining checkpoint") as tmp:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / RECORD).write_text(json.dumps(record, indent=2, default=float) + "\n")
    return step_folder(series, step)


def read_series(folder: str | Path) -> list[tuple[int, Path]]:
    """The checkpoints of a series (a model folder's ``checkpoints/``, or a folder of ``step<N>`` folders), by step."""
    from ..layout import identity_pattern

    folder = Path(folder)
    folder = folder / SERIES if (folder / SERIES).is_dir() else folder
    named = identity_pattern("step{seed}")  # a step number is written as a seed is: digits
    found = [(int(m["seed"]), p) for p in folder.iterdir() if p.is_dir() and (m := named.fullmatch(p.name))]
    if not found:
        raise FileNotFoundError(f"{folder}: no checkpoint folders (step<N>/); pretrain with --checkpoints N first")
    return sorted(found)
