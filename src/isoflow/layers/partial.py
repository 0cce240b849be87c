"""A layer analysis that survives being stopped: what it has done so far, kept beside its output folder.

A real LM's analysis takes hours on a CPU (SmolLM2-135M on 100,000 Brown tokens: about half an hour encoding, then
minutes per layer for 31 layers), and a session end, ``scancel`` or Ctrl-C would otherwise lose all of it. While it
runs, ``<runs>/<model>/.<corpus>.partial/`` holds

- ``what.json``: what the analysis is (model and its weights' sha256, corpus, settings, sentences, batch size);
- ``states/``: every layer's token states (the streaming store's files, :class:`~isoflow.layers.store.LayerStore`)
  and, for a run keeping a sample of its points, each measured layer's types' sums (``types<k>.f64``);
- ``encoded.npz``: the tokens' types, positions and ids, written once encoding has finished;
- ``statistics.pt``: a run keeping a sample of its points (``states: sample``), the sums it folded in while encoding;
- ``layer<i>.pkl``: each measured layer's outputs.

The same command picks it up: encoding is skipped once finished, measured layers are read back. A folder made for
another analysis (other settings, other weights) is started afresh. It is removed once the output folder is written.

Another machine can pick it up too: a sweep saved in parts (``make save-partial-<publication>``) carries ``CARRIED``
(the description and the measured layers: kilobytes, where the states are gigabytes); there the tokens are encoded
again and the layers not yet measured are measured (the record's ``resumed`` says which layers came from before and
that the encoding did not).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil

import numpy as np

from ..atomic import atomic_file, in_progress_path
from .store import LayerStore

logger = logging.getLogger(__name__)

# What a saved sweep carries to the next machine (glob patterns inside the progress folder): the analysis'
# description and its measured layers; not the states, nor the tokens encoded with them.
CARRIED = ("what.json", "layer*.pkl")
STATES = "states"  # the store's folder: every layer's states, and the types' sums of a run keeping a sample


class PartialRun:
    """The progress of the analysis writing ``out``; ``what``: a JSON-able description of the analysis (a folder
    left by another analysis is removed)."""

    def __init__(self, out: str | os.PathLike, what: dict):
        self.dir = in_progress_path(out)  # .<name>.partial beside out
        text = json.dumps(what, sort_keys=True, indent=1, default=str)
        found = self.dir / "what.json"
        if self.dir.is_dir() and not (found.is_file() and found.read_text() == text):
            logger.warning("%s was left by another analysis (other settings or weights): starting afresh", self.dir)
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if not found.is_file():
            with atomic_file(found) as tmp:
                tmp.write_text(text)

    def store(self, n_layers: int, n_points: int, dim: int, sums_bytes: int = 0) -> LayerStore:
        """The layers' states (and a run keeping its sample's types' sums, ``sums_bytes``), kept in the folder (and
        read back once encoded: the caller marks the store filled when :meth:`encoded` gives the tokens)."""
        return LayerStore(n_layers, n_points, dim, self.dir / STATES, keep=True, sums_bytes=sums_bytes)

    def encoded(self) -> dict | None:
        """The tokens of a finished encoding (types, positions, token_ids, n_special, positions_computed, seconds), or
        None."""
        path = self.dir / "encoded.npz"
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=True) as f:
            return {key: f[key] for key in f.files}

    def save_encoded(self, **arrays) -> None:
        with atomic_file(self.dir / "encoded.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    def save_statistics(self, statistics) -> None:
        """The sums a run that keeps a sample of its points folded in while encoding (isoflow.layers.streamed), saved
        before the tokens: a run whose tokens are kept has its sums too."""
        import torch

        with atomic_file(self.dir / "statistics.pt") as tmp, open(tmp, "wb") as fh:
            torch.save(statistics, fh)

    def statistics(self):
        """The saved sums (on the CPU), or None; the types' sums they keep on disk read where this folder is now
        (None where one is missing: encode again)."""
        import torch

        path = self.dir / "statistics.pt"
        if not path.is_file():
            return None
        saved = torch.load(path, map_location="cpu", weights_only=False)
        for layer in saved["layers"]:
            if layer.types.path is not None:
                layer.types.path = self.dir / STATES / layer.types.path.name
                if not layer.types.path.is_file():
                    return None
        return saved

    def measured(self, layer: int) -> dict | None:
        path = self.dir / f"layer{layer}.pkl"
        if not path.is_file():
            return None
        with open(path, "rb") as fh:
            return pickle.load(fh)

    def measured_layers(self) -> list[int]:
        """The layers measured so far."""
        return sorted(int(p.stem[len("layer") :]) for p in self.dir.glob("layer*.pkl"))

    def save_measured(self, layer: int, outputs: dict) -> None:
        with atomic_file(self.dir / f"layer{layer}.pkl") as tmp, open(tmp, "wb") as fh:
            pickle.dump(outputs, fh)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
