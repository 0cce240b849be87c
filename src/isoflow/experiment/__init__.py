"""The optimisation experiment (Mickus et al. 2024) and the analysis of its trajectories."""

from .istar import IStar
from .optimize import Diverged, OptimizationError, Settings, Trajectory, optimize
from .run import default_steps, lambda_dir, run, run_seeds, trajectory_path, write_trajectory

__all__ = ["Diverged", "IStar", "OptimizationError", "Settings", "Trajectory", "default_steps", "lambda_dir", "optimize", "run", "run_seeds",
           "trajectory_path", "write_trajectory"]
