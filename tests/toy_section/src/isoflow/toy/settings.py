"""The toy section's settings: its config key's schema and its command's options, declared once."""

from __future__ import annotations

from dataclasses import dataclass

from isoflow.settings import setting


@dataclass(frozen=True)
class ToySettings:
    seeds: tuple[int, ...] = setting((0,), "the runs' seeds", minimum=0, cli=False)
    points: int = setting(200, "points per cloud", minimum=2)
    dim: int = setting(8, "dimensions of a cloud", minimum=1)
