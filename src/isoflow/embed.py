"""Embedding tables: one float32 row per task item, cached by (model, task items).

Output directory (default ``<data_dir>/embeddings/<model>/<task>/``):
``embeddings.npy`` (n_items × dim, float32, row i = item i of the task),
``index.parquet`` (row, text) and ``meta.json`` (model, source, dim, device,
seconds, the sha256 of the item list and of ``embeddings.npy``). An existing
table whose item hash matches is reused: nothing is encoded twice.

:func:`load_embeddings` checks ``embeddings.npy`` against the sha256 in
``meta.json`` (once per process and file state), so a corrupted or truncated
table is an error naming the file and the fix, never silently used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .atomic import atomic_dir, check_replaceable
from .datasets import raw_cache, read_task, resolve_name, task_dir
from .models import is_static, sentence_model, static_model

logger = logging.getLogger(__name__)

EMBEDDING_FILES = ("embeddings.npy", "index.parquet", "meta.json")


def items_digest(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def embeddings_dir(model: str, task: str, data_dir: str | os.PathLike = "data") -> Path:
    return Path(data_dir) / "embeddings" / model / resolve_name(task)


class EmbeddingsError(ValueError):
    """An embedding table on disk is missing, unreadable or does not match its meta.json."""


_VERIFIED: set[tuple[str, int, int, str]] = set()  # (path, size, mtime_ns, sha256) already checked in this process


def _fix(meta: dict, d: Path) -> str:
    model, task = meta.get("model", "<model>"), meta.get("task", "<task>")
    return f"re-encode it: `isoflow encode --model {model} --dataset {task} --out {d} --force`"


def verify_embeddings(path: str | os.PathLike) -> dict:
    """Check ``embeddings.npy`` against the sha256 recorded in ``meta.json``; returns the meta. Hashes each file
    state (path, size, mtime) once per process."""
    from .fetch import sha256_of

    d = Path(path)
    meta_path, npy = d / "meta.json", d / "embeddings.npy"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{meta_path} is missing: {d} is not an isoflow embedding table; run `isoflow encode` first") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise EmbeddingsError(f"{meta_path} is not valid JSON ({exc}); {_fix({}, d)}") from exc
    if not npy.is_file():
        raise FileNotFoundError(f"{npy} is missing; {_fix(meta, d)}")
    expected = meta.get("embeddings_sha256")
    if expected is None:  # tables written before the checksum was recorded
        return meta
    st = npy.stat()
    key = (str(npy.resolve()), st.st_size, st.st_mtime_ns, expected)
    if key not in _VERIFIED:
        actual = sha256_of(npy)
        if actual != expected:
            raise EmbeddingsError(f"{npy} does not match the sha256 recorded in {meta_path} (corrupted, truncated or "
                                  f"replaced since it was written); {_fix(meta, d)}")
        _VERIFIED.add(key)
    return meta


def load_embeddings(path: str | os.PathLike) -> tuple[np.ndarray, dict]:
    """(embeddings (n_items, dim) float32, meta) of an embedding table, verified (see :func:`verify_embeddings`)."""
    d = Path(path)
    meta = verify_embeddings(d)
    npy = d / "embeddings.npy"
    try:
        emb = np.load(npy, allow_pickle=False)
    except Exception as exc:  # truncated or not a .npy at all
        raise EmbeddingsError(f"{npy} could not be read as a .npy array ({type(exc).__name__}: {exc}); {_fix(meta, d)}") from exc
    want = (meta.get("n_items"), meta.get("dim"))
    if emb.ndim != 2 or (None not in want and emb.shape != want):
        raise EmbeddingsError(f"{npy} has shape {emb.shape} but {d / 'meta.json'} records {want}; {_fix(meta, d)}")
    return emb, meta


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
    check_replaceable(out, expected=EMBEDDING_FILES, force=force)
    if not force and (out / "meta.json").is_file():
        try:
            meta = verify_embeddings(out)
        except (EmbeddingsError, FileNotFoundError) as exc:  # our own cache, damaged: encode again
            logger.warning("re-encoding: %s", exc)
        else:
            if meta.get("items_sha256") == digest and meta.get("model") == model:
                return out

    cache = raw_cache(data_dir, raw_dir)
    t0 = time.perf_counter()
    if static:
        spec = static_model(model)
        emb = spec.load(cache, mirror).lookup(texts)
        source, dev = spec.source, "cpu" if spec.encoder is None else str(resolve_device(device))
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
    _write(out, emb, texts, meta, force=force)
    return out


def _write(out: Path, emb: np.ndarray, texts: list[str], meta: dict, *, force: bool) -> None:
    """Temp directory beside ``out``, then rename: an interrupted run leaves no table behind."""
    from .fetch import sha256_of

    with atomic_dir(out, expected=EMBEDDING_FILES, force=force, kind="embeddings") as tmp:
        np.save(tmp / "embeddings.npy", emb)
        meta = {**meta, "embeddings_sha256": sha256_of(tmp / "embeddings.npy")}
        pd.DataFrame({"row": np.arange(len(texts)), "text": texts}).to_parquet(tmp / "index.parquet", index=False)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
