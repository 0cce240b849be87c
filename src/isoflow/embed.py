"""Embedding tables: one float32 row per task item, cached by (model, task items).

Output directory (default ``<data_dir>/embeddings/<model>/<task>/``):
``embeddings.npy`` (n_items × dim, float32, row i = item i of the task),
``index.parquet`` (row, text) and ``meta.json`` (model, source, dim, device,
seconds, and the sha256 of the item list). An existing table whose item hash
matches is reused: nothing is encoded twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .atomic import atomic_dir
from .datasets import raw_cache, read_task, resolve_name, task_dir
from .models import is_static, sentence_model, static_model


def items_digest(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def embeddings_dir(model: str, task: str, data_dir: str | os.PathLike = "data") -> Path:
    return Path(data_dir) / "embeddings" / model / resolve_name(task)


def load_embeddings(path: str | os.PathLike) -> tuple[np.ndarray, dict]:
    d = Path(path)
    return np.load(d / "embeddings.npy"), json.loads((d / "meta.json").read_text())


def encode(
    model: str,
    task: str,
    *,
    data_dir: str | os.PathLike = "data",
    task_path: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    batch_size: int = 64,
    device: str = "auto",
    mirror=None,
    force: bool = False,
    progress: bool | None = None,
    raw_dir: str | os.PathLike | None = None,
) -> Path:
    """Embed the items of a prepared task with ``model``; returns the output directory."""
    from .devices import resolve_device

    progress = sys.stderr.isatty() if progress is None else progress
    static = is_static(model)
    tdata = read_task(task_path or task_dir(task, data_dir))
    texts = tdata.items["text"].astype(str).tolist()
    digest = items_digest(texts)
    out = Path(out or embeddings_dir(model, task, data_dir))
    if not force and (out / "meta.json").is_file():
        meta = json.loads((out / "meta.json").read_text())
        if meta.get("items_sha256") == digest and meta.get("model") == model and (out / "embeddings.npy").is_file():
            return out

    cache = raw_cache(data_dir, raw_dir)
    t0 = time.perf_counter()
    if static:
        spec = static_model(model)
        emb = spec.load(cache, mirror).lookup(texts)
        source, dev = spec.canonical.urls[0], "cpu"
    else:
        spec = sentence_model(model)
        dev = str(resolve_device(device))
        from .models.sbert import encode_sentences, load_sentence_model

        st = load_sentence_model(spec, dev, cache, mirror)
        emb = encode_sentences(st, texts, batch_size=batch_size, progress=progress)
        source = spec.hub_id
    meta = {
        "model": model,
        "source": source,
        "task": tdata.name,
        "n_items": len(texts),
        "dim": int(emb.shape[1]),
        "dtype": "float32",
        "device": dev,
        "batch_size": None if static else batch_size,
        "seconds": round(time.perf_counter() - t0, 3),
        "items_sha256": digest,
    }
    _write(out, emb, texts, meta)
    return out


def _write(out: Path, emb: np.ndarray, texts: list[str], meta: dict) -> None:
    """Temp directory beside ``out``, then rename: an interrupted run leaves no table behind."""
    with atomic_dir(out) as tmp:
        np.save(tmp / "embeddings.npy", emb)
        pd.DataFrame({"row": np.arange(len(texts)), "text": texts}).to_parquet(tmp / "index.parquet", index=False)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
