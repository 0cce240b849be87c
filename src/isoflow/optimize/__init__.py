"""The optimisation experiment (Mickus et al. 2024): an embedding table and a linear classifier trained together,
IsoScore and the silhouette recorded after every update. :mod:`.optimize` (the loop), :mod:`.run` (files in,
record out), :mod:`.report` (the paper's tables and figures), :mod:`.istar_report` (the I-STAR sweep's),
:mod:`.paper` (the paper's published numbers)."""

from .loop import Diverged, OptimizationError, Settings, Trajectory, optimize
from .run import default_steps, run, run_seeds, trajectory_path, write_trajectory

__all__ = ["Diverged", "OptimizationError", "Settings", "Trajectory", "default_steps", "optimize", "run", "run_seeds",
           "trajectory_path", "write_trajectory"]
