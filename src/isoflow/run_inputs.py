"""A run's inputs, resolved one way for every section: the first half of the run skeleton.

Each section's run (``optimize``, ``finetune``, ``layers``, ``pretrain``, the diagnoses) checks its settings, then asks
:func:`run_inputs` for what it reads — the task from its prepared folder, the model turned into its loader
(:mod:`isoflow.models.resolve`; a name or path, or a :class:`~isoflow.models.spec.ModelSpec`), the device chosen
(:mod:`isoflow.devices`) — and hands its body to :func:`isoflow.skeleton.run_section`, which writes its record last
and atomically. What differs between sections is only its body.

Examples
--------
>>> from isoflow.run_inputs import run_inputs
>>> run_inputs(device="cpu").device
device(type='cpu')
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .cpu_gemm import settle
from .datasets import TaskData, prepared_task, raw_cache, read_task
from .devices import resolve_device
from .models.resolve import ResolvedModel, resolve_model
from .models.spec import ModelSpec


@dataclass(frozen=True)
class RunInputs:
    """What one run reads: ``device``; ``cache``, the raw-file cache (``raw_dir``, else ``<data_dir>/raw``); and, when
    asked for, ``task`` (read from ``task_path``) and ``model`` (its loader, which names it and records its source)."""

    device: torch.device
    cache: Path
    task: TaskData | None = None
    task_path: Path | None = None
    model: ResolvedModel | None = None


def run_inputs(
    *,
    device: str = "auto",
    task: str | None = None,
    task_path: str | os.PathLike | None = None,
    model: str | os.PathLike | ModelSpec | None = None,
    data_dir: str | os.PathLike = "data",
    raw_dir: str | os.PathLike | None = None,
    mirror=None,
) -> RunInputs:
    """Resolve a run's inputs, each checked before any work: the model first (an unknown name, a folder that is no
    model), then the device (``auto``: CUDA when present, else the CPU; on the CPU, the host's GEMM choice settled:
    :mod:`isoflow.cpu_gemm`), then the task (``task_path``, else
    ``<data_dir>/tasks/<task>``; a name neither prepared nor registered is refused, naming the known tasks)."""
    cache = raw_cache(data_dir, raw_dir)
    resolved = None if model is None else resolve_model(model, cache=cache, mirror=mirror)
    dev = resolve_device(device)
    settle(dev)  # the CPU GEMM the metrics use on this host, measured once per host (isoflow.cpu_gemm)
    tpath = None if task is None else prepared_task(task, data_dir, task_path)
    return RunInputs(
        device=dev, cache=cache, task=None if tpath is None else read_task(tpath), task_path=tpath, model=resolved
    )
