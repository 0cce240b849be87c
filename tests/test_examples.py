"""The examples of I-STAR in your own training loop run as shipped (a tiny model built on the spot; no hub)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plain_pytorch_loop():
    log = _load("istar_plain_loop").train(epochs=2, istar_lambda=-1.0)
    assert len(log) == 4 and all(math.isfinite(r["loss"]) for r in log)
    assert all(-1.0 <= r["penalty"] <= 0.0 for r in log) and any(
        r["penalty"] != 0 for r in log
    )  # λ(1 − IsoScore*), λ = −1


def test_hugging_face_trainer(tmp_path):
    log = _load("istar_hf_trainer").train(out_dir=str(tmp_path), istar_lambda=-1.0, max_steps=4)
    assert len(log) == 4 and all(math.isfinite(r["loss"]) for r in log)
