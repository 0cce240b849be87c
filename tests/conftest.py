"""Shared point clouds for the metric tests: random, clustered, low-rank, near-degenerate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make_cloud(kind: str, n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(X float64, labels) of a named kind; labels are 3 classes (clustered: the true clusters)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    if kind == "random":
        X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    elif kind == "clustered":
        centres = rng.normal(scale=4.0, size=(3, d))
        X = centres[labels] + rng.normal(size=(n, d))
    elif kind == "lowrank":
        r = max(2, d // 4)
        X = rng.normal(size=(n, r)) @ rng.normal(size=(r, d)) + 3.0
    elif kind == "degenerate":
        # One dominant direction plus a whisper of noise: IsoScore near 0.
        X = np.outer(rng.normal(size=n), rng.normal(size=d)) * 1e3 + rng.normal(scale=1e-3, size=(n, d))
    else:
        raise ValueError(kind)
    return X, labels


CLOUD_KINDS = ["random", "clustered", "lowrank", "degenerate"]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# Real data: ../shared/data beside the checkout (also in CI), used as a mirror exactly as a user would.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_mirror() -> Path:
    if not (SHARED_DATA / "SOURCES.md").is_file():
        pytest.fail(f"the shared data mirror {SHARED_DATA} is missing: these tests need the real files")
    return SHARED_DATA
