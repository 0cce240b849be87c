"""A toy section: the IsoScore of a seeded Gaussian cloud whose axes' scales fall as 1/(i + 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from isoflow.layout import RunId

from .settings import ToySettings


@dataclass(frozen=True)
class ToyRun(RunId):
    """One run: ``<results>/toy/runs/seed<S>`` (add ``.json``), written by the command and named by the rules."""

    SECTION: ClassVar[str] = "toy"
    TEMPLATE: ClassVar[str] = "seed{seed}"
    seed: int


def cloud(seed: int, settings: ToySettings) -> torch.Tensor:
    """``points`` × ``dim`` Gaussian points, axis i scaled by 1/(i + 1), drawn from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    scales = 1.0 / torch.arange(1, settings.dim + 1, dtype=torch.float64)
    return torch.randn(settings.points, settings.dim, generator=generator, dtype=torch.float64) * scales


def measure(seed: int, settings: ToySettings) -> dict:
    """The run's record: its seed and the cloud's IsoScore."""
    from isoflow.metrics import isoscore

    return {"seed": seed, "isoscore": float(isoscore(cloud(seed, settings)))}
