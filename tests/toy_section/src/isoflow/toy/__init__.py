"""A toy section: the IsoScore of a seeded Gaussian cloud whose axes' scales fall as 1/(i + 1)."""

from __future__ import annotations

import torch

from .settings import ToySettings


def cloud(seed: int, settings: ToySettings) -> torch.Tensor:
    """``points`` × ``dim`` Gaussian points, axis i scaled by 1/(i + 1), drawn from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    scales = 1.0 / torch.arange(1, settings.dim + 1, dtype=torch.float64)
    return torch.randn(settings.points, settings.dim, generator=generator, dtype=torch.float64) * scales


def measure(seed: int, settings: ToySettings) -> dict:
    """The run's record: its seed and the cloud's IsoScore."""
    from isoflow.metrics import isoscore

    return {"seed": seed, "isoscore": float(isoscore(cloud(seed, settings)))}
