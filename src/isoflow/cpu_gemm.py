"""The host's CPU GEMM choice (:mod:`isoflow.metrics.device_policy`, "CPU GEMM"): one whole metric step timed each way,
once per host, and kept.

It lives above the metrics because it times them; the policy holds only its answer. A run settles it when it resolves
its device (:func:`isoflow.run_inputs.run_inputs` calls :func:`settle`): under ``ISOFLOW_CPU_GEMM=auto`` on a CPU the
choice is read back from ``$XDG_CACHE_HOME/isoflow/cpu-gemm.json`` (keyed by host, CPU, core and thread counts and
library versions), or measured now and stored there, so that every later run on the host makes the same choice (runs
on a busy machine would otherwise flip between the two and differ by rounding).

Examples
--------
>>> import torch
>>> from isoflow import cpu_gemm
>>> cpu_gemm.settle(torch.device("cuda"))  # nothing to settle off the CPU
"""

from __future__ import annotations

import functools
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from .atomic import atomic_file
from .metrics import device_policy
from .metrics._validate import encode_labels
from .metrics.isotropy import isoscore_tensor
from .metrics.silhouette import silhouette_tensor


def cache_file() -> Path:
    """Where the hosts' choices are kept: ``$XDG_CACHE_HOME/isoflow/cpu-gemm.json`` (``~/.cache`` without it)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "isoflow" / "cpu-gemm.json"


def host_key() -> str:
    """What a kept choice is valid for: what was measured, the host, its CPU, core and thread counts, the libraries."""
    return "|".join(
        [
            "metric-step",  # what was measured: a choice measured another way is measured again
            platform.node(),
            platform.processor() or platform.machine(),
            str(os.cpu_count()),
            torch.__version__,
            np.__version__,
            str(torch.get_num_threads()),
        ]
    )


def measure() -> str:
    """``numpy`` if the whole metric step is at least 15 % faster through NumPy's BLAS, else ``torch``.

    One whole metric step each way, as the experiment's loop runs it after every update: the silhouette (2 clusters)
    and IsoScore of 8,192 × 384 float32 points (36 block pairs), then a torch product standing for the update that
    follows. Timing the functions themselves, not a model of them, counts everything each path does: OpenBLAS's
    threads keep spinning after a product, and that cost comes with NumPy's faster GEMM."""
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((8192, 384), dtype=np.float32))
    clusters = encode_labels(torch.from_numpy(rng.integers(0, 2, 8192)), 8192)
    update = torch.ones(384, 384)

    def step() -> None:
        silhouette_tensor(x, clusters)
        isoscore_tensor(x)
        x[:1024] @ update

    took = {}
    for choice in ("numpy", "torch"):
        with device_policy.timing(choice):
            took[choice] = best_seconds(step, repeats=2)
    return "numpy" if took["numpy"] * 1.15 < took["torch"] else "torch"


def best_seconds(step, repeats: int, device: str = "cpu") -> float:
    """The least seconds of ``repeats`` calls of ``step`` after one that warms it up (a CUDA ``device`` synchronised
    around each, so that its kernels' time is counted)."""
    times = []
    for _ in range(repeats + 1):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times[1:])


@functools.cache
def host_choice() -> str:
    """The host's choice: from the cache file if it has this host's, else measured now and stored (best effort: a
    read-only home measures again in the next process)."""
    path, key = cache_file(), host_key()
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    known = known if isinstance(known, dict) else {}
    if known.get(key) in ("torch", "numpy"):
        return known[key]
    choice = measure()
    try:
        with atomic_file(path) as tmp:
            tmp.write_text(json.dumps({**known, key: choice}, indent=1) + "\n")
    except OSError:
        pass
    return choice


def settle(device: torch.device) -> None:
    """Give the device policy the host's choice, when ``device`` is the CPU and ``ISOFLOW_CPU_GEMM`` is ``auto``
    (read back or measured once: :func:`host_choice`); otherwise nothing is measured."""
    if device.type == "cpu" and device_policy.gemm_setting() == "auto":
        device_policy.use_host_choice(host_choice())
