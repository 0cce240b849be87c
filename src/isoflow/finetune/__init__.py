"""Fine-tuning the sentence encoder itself with I-STAR (Rudman & Eickhoff 2024), measured on held-out data:
:mod:`.data` (training and held-out examples), :mod:`.model` (the encoder as sentence-transformers builds it),
:mod:`.train` (the loop), :mod:`.run` (files in, records out), :mod:`.report` (the sweep's table and figures)."""

from .run import finetune_path, run_finetune
from .train import FinetuneSettings

__all__ = ["FinetuneSettings", "finetune_path", "run_finetune"]
