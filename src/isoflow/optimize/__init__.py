"""The optimisation experiment (Mickus et al. 2024): an embedding table and a linear classifier trained together,
IsoScore and the silhouette recorded after every update. :mod:`.settings` (what a run is), :mod:`.loop` (the loop),
:mod:`.run` (files in, record out), :mod:`.report` (the paper's tables and figures), :mod:`.istar_report` (the I-STAR
sweep's), :mod:`.paper` (the paper's published numbers)."""

from .settings import Settings

__all__ = [
    "Diverged",
    "OptimizationError",
    "Settings",
    "Trajectory",
    "default_steps",
    "optimize",
    "run_optimize",
    "run_seeds",
    "trajectory_path",
]

_LAZY = {
    "Diverged": "loop",
    "OptimizationError": "loop",
    "Trajectory": "loop",
    "optimize": "loop",
    "default_steps": "run",
    "run_optimize": "run",
    "run_seeds": "run",
    "trajectory_path": "run",
}


def __getattr__(name: str):
    # Lazy: the settings (the command line, the workflow) do not load torch.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'isoflow.optimize' has no attribute {name!r}")
