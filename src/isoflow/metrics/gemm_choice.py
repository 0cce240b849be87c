"""The CPU GEMM choice measured (:mod:`isoflow.metrics.device_policy`, "CPU GEMM"): one whole metric step each way.

Kept apart from the policy because it times the metrics, which import the policy: the policy imports this module only
inside ``device_policy.measure_cpu_gemm``, when a measurement is due."""

from __future__ import annotations

import time

import numpy as np
import torch

from . import device_policy
from ._validate import encode_labels
from .isotropy import isoscore_tensor
from .silhouette import silhouette_tensor


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

    def best() -> float:
        step()
        times = []
        for _ in range(2):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
        return min(times)

    took = {}
    try:
        for choice in ("numpy", "torch"):
            device_policy._timing = choice
            took[choice] = best()
    finally:
        device_policy._timing = None
    return "numpy" if took["numpy"] * 1.15 < took["torch"] else "torch"
