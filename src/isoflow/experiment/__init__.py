"""The optimisation experiment (Mickus et al. 2024) and the analysis of its trajectories."""

from .optimize import OptimizationError, Settings, Trajectory, optimize
from .run import default_steps, run, trajectory_path, write_trajectory

__all__ = ["OptimizationError", "Settings", "Trajectory", "default_steps", "optimize", "run", "trajectory_path", "write_trajectory"]
