"""Checkpoint series: the schedule of steps a pretraining run keeps, and how a series lies on disk — one place that
``isoflow pretrain`` writes by, the model loader reads a revision by (:func:`isoflow.models.local.revision_folder`) and
the workflow plans one job per checkpoint by.

A series is a model folder's ``checkpoints/`` (``isoflow pretrain --checkpoints N``), or any folder of checkpoint
folders, each named as Pythia's hub revisions are: ``step<N>`` (:func:`revision`). The schedule has Pythia's shape
scaled to the run's steps (Biderman et al. 2023: steps 0, 1, 2, 4, …, 512, then every 1,000 to 143,000): step 0, the
powers of two below the stride, then ``m`` evenly spaced steps ending at the last, with the largest ``m`` that keeps
the series within ``count`` checkpoints — :func:`checkpoint_steps` (143,000 steps and 154 checkpoints give Pythia's
own)."""

from __future__ import annotations

import math
from pathlib import Path

from .layout import identity_pattern

SERIES = "checkpoints"  # a model folder's checkpoint series: <model>/checkpoints/step<N>/
REVISION = "step{step}"  # a checkpoint's name in a series, as Pythia's hub revisions are named (step1000)


def pretrained_runs(pretrain: dict | None) -> dict[str, dict]:
    """Each model a workflow config's ``pretrain`` section trains, with its settings (among them the steps and the
    checkpoints its series keeps): the shared ``training`` ones under its own. How the rules and a publication in parts
    read a config's series."""
    pretrain = pretrain or {}
    shared = pretrain.get("training") or {}
    return {name: {**shared, **entry} for name, entry in (pretrain.get("models") or {}).items()}


def revision(step: int) -> str:
    """A checkpoint's name: ``step<N>``."""
    return REVISION.format(step=step)


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


def step_of(name: str) -> int | None:
    """The step a revision names, or None: ``step<N>`` (ours, Pythia's) read as N, also as one dash-separated part of
    a longer name (OLMo's ``step1000-tokens4B``, OLMo 2's ``stage1-step140000-tokens294B``).

    >>> step_of("step1000-tokens4B"), step_of("stage1-step140000-tokens294B"), step_of("main")
    (1000, 140000, None)"""
    steps = [int(found["step"]) for part in name.split("-") if (found := _STEP.fullmatch(part))]
    return steps[0] if len(steps) == 1 else None


_STEP = identity_pattern(REVISION)  # one part of a revision's name: step<N>


def step_folder(series: str | Path, step: int) -> Path:
    """``<series>/step<N>``."""
    return Path(series) / revision(step)


def series_folder(folder: str | Path) -> Path:
    """Where a series' checkpoint folders are: a model folder's ``checkpoints/`` where it has one, else ``folder``."""
    folder = Path(folder)
    return folder / SERIES if (folder / SERIES).is_dir() else folder


def read_series(folder: str | Path) -> list[tuple[int, Path]]:
    """The checkpoints of a series (a model folder's ``checkpoints/``, or a folder of ``step<N>`` folders), by step."""
    folder = series_folder(folder)
    named = identity_pattern(REVISION)
    found = [(int(m["step"]), p) for p in folder.iterdir() if p.is_dir() and (m := named.fullmatch(p.name))]
    if not found:
        raise FileNotFoundError(f"{folder}: no checkpoint folders (step<N>/); pretrain with --checkpoints N first")
    return sorted(found)
