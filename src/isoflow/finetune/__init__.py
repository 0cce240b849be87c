"""Fine-tuning the sentence encoder itself with I-STAR (Rudman & Eickhoff 2024), measured on held-out data:
:mod:`.settings` (what a run is), :mod:`.data` (training and held-out examples), :mod:`.model` (the encoder as
sentence-transformers builds it), :mod:`.train` (the loop), :mod:`.run` (files in, records out), :mod:`.report` (the
sweep's table and figures)."""

from .settings import FinetuneSettings

__all__ = ["FinetuneSettings", "finetune_path", "run_finetune"]


def __getattr__(name: str):
    # Lazy: the settings (the command line, the workflow) do not load torch.
    if name in ("finetune_path", "run_finetune"):
        from . import run

        return getattr(run, name)
    raise AttributeError(f"module 'isoflow.finetune' has no attribute {name!r}")
