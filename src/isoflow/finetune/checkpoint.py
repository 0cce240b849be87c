"""A fine-tuning run that survives being stopped: its state after the last epoch it finished, kept beside its records.

A run on a real LM takes half an hour or more on a CPU (SmolLM2-135M on 2,000 SST-2 phrases, 3 epochs: about 31
minutes on 2 cores), and a session's end, ``scancel`` or Ctrl-C would otherwise lose all of it. After every measured
epoch but the last, ``.<name>.partial`` beside the run's records (``<name>.json``, ...;
``isoflow.atomic.in_progress_path``: a hidden name, neither a record nor saved with the finished runs) holds

- what the run is (its settings, the model's source, the data's sizes): a file saved for another run is ignored;
- the encoder's and the head's weights, AdamW's state, the random states (the batch order's generator, torch's for
  dropout) and I-STAR's Σ_S;
- what was measured so far (every epoch's row, every step's loss and penalty, the timings).

The same command picks it up after that epoch and gives the numbers of a run never stopped (a test checks it, bit for
bit); the run's record says so (``resumed``: after which epoch, and the code commit that ran the epochs before). The
file is removed once the run's records are written. Its size is the model's parameters about three times over (the
weights and AdamW's two moments): 1.6 GB for SmolLM2-135M, 270 MB for MiniLM.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from ..atomic import atomic_file

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    identity: dict  # what the run is; a saved state made for anything else is not resumed

    def load(self) -> dict | None:
        """The saved state of this run, or None (none saved, unreadable, or another run's: then it is started afresh,
        and the file replaced at its first finished epoch)."""
        if not self.path.is_file():
            return None
        try:
            # weights_only=False: the measured rows hold numpy arrays; the file is one this run's command wrote
            state = torch.load(self.path, map_location="cpu", weights_only=False)
        except Exception as exc:  # a file cut short by a full disk, a torch that cannot read it: start afresh
            logger.warning("%s: not readable (%s); the run starts from the beginning", self.path, exc)
            return None
        if not isinstance(state, dict) or state.get("identity") != self.identity:
            logger.warning("%s: saved by another run (other settings, model or data); starting afresh", self.path)
            return None
        return state

    def save(self, state: dict) -> None:
        with atomic_file(self.path) as tmp:
            torch.save({"identity": self.identity, **state}, tmp)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
