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
from .errors import read_json
from .models.sbert import ENCODE_BATCH_SIZE
from .models.spec import ModelSpec
from .provenance import shown_path

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
    return f"re-encode it: `isoflow encode --model {model} --task {task} --out {d} --force`"


def verify_embeddings(path: str | os.PathLike) -> dict:
    """Check ``embeddings.npy`` against the sha256 recorded in ``meta.json``; returns the meta. Hashes each file
    state (path, size, mtime) once per process."""
    from .fetch import sha256_of

    d = Path(path)
    meta_path, npy = d / "meta.json", d / "embeddings.npy"
    meta = read_json(
        meta_path,
        missing=lambda: FileNotFoundError(
            f"{meta_path} is missing: {d} is not an isoflow embedding table; run `isoflow encode` first"
        ),
        invalid=lambda exc: EmbeddingsError(f"{meta_path} is not valid JSON ({exc}); {_fix({}, d)}"),
    )
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
            raise EmbeddingsError(
                f"{npy} does not match the sha256 recorded in {meta_path} (corrupted, truncated or "
                f"replaced since it was written); {_fix(meta, d)}"
            )
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
        raise EmbeddingsError(
            f"{npy} could not be read as a .npy array ({type(exc).__name__}: {exc}); {_fix(meta, d)}"
        ) from exc
    want = (meta.get("n_items"), meta.get("dim"))
    if emb.ndim != 2 or (None not in want and emb.shape != want):
        raise EmbeddingsError(f"{npy} has shape {emb.shape} but {d / 'meta.json'} records {want}; {_fix(meta, d)}")
    return emb, meta


def encode(
    model: str | os.PathLike | ModelSpec,
    task: str,
    *,
    data_dir: str | os.PathLike = "data",
    task_path: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    batch_size: int = ENCODE_BATCH_SIZE,
    device: str = "auto",
    mirror=None,
    force: bool = False,
    progress: bool | None = None,
    raw_dir: str | os.PathLike | None = None,
    pooling: str = "mean",
) -> Path:
    """Embed the items of a prepared task with ``model`` (a short name, or a local model directory: see
    :mod:`isoflow.models.local`; a :class:`~isoflow.models.spec.ModelSpec` names the outputs, a revision and a
    dtype; its outputs go under that name or the folder's); returns the output directory."""
    from .models.resolve import resolve_model

    progress = sys.stderr.isatty() if progress is None else progress
    cache = raw_cache(data_dir, raw_dir)
    resolved = resolve_model(model, cache=cache, mirror=mirror)
    name, local = resolved.name, resolved.local
    expected_source = None if local else resolved.origin  # an unknown name: one line naming the known ones
    tdata = read_task(task_path or task_dir(task, data_dir))
    texts = tdata.items["text"].astype(str).tolist()
    digest = items_digest(texts)
    out = Path(out or embeddings_dir(name, task, data_dir))
    check_replaceable(out, expected=EMBEDDING_FILES, force=force)
    if not force and (out / "meta.json").is_file():
        try:
            meta = verify_embeddings(out)
        except (EmbeddingsError, FileNotFoundError) as exc:  # our own cache, damaged: encode again
            logger.warning("re-encoding: %s", exc)
        else:
            # reused only if this model made it: vectors imported or encoded under its name elsewhere are replaced
            made_here = meta.get("model") == name and meta.get("source") == expected_source
            if meta.get("items_sha256") == digest and made_here and not local:
                return out

    t0 = time.perf_counter()
    emb, dev = resolved.sentence_embeddings(
        texts, device=device, batch_size=batch_size, pooling=pooling, progress=progress
    )
    source = resolved.origin
    warn_repeated_rows(emb, f"{name} x {tdata.name}")
    meta = {
        "model": name,
        "source": source,
        "task": tdata.name,
        "n_items": len(texts),
        "dim": int(emb.shape[1]),
        "dtype": "float32",
        "device": dev,
        "batch_size": batch_size if resolved.batched else None,
        "seconds": round(time.perf_counter() - t0, 3),
        "items_sha256": digest,
    }
    write_embeddings(out, emb, texts, meta, force=force)
    return out


REPEATED_ROWS_WARN = 0.01  # share of rows that repeat another row exactly, above which a table is suspect


def warn_repeated_rows(emb: np.ndarray, what: str) -> int:
    """Warn when distinct texts got identical vectors (a tokenizer that maps most words to its unknown token, a
    broken pooling): the table would measure the model's blind spot, not the texts. Returns the repeated rows."""
    distinct = len(np.unique(emb, axis=0)) if len(emb) else 0
    repeated = len(emb) - distinct
    if repeated > REPEATED_ROWS_WARN * len(emb):
        logger.warning(
            "%s: %d of its %d rows repeat another row exactly (%d distinct vectors for %d distinct texts): the model "
            "cannot tell those texts apart; check its tokenizer (most words unknown?) and pooling",
            what,
            repeated,
            len(emb),
            distinct,
            len(emb),
        )
    return repeated


def write_embeddings(out: Path, emb: np.ndarray, texts: list[str], meta: dict, *, force: bool = False) -> None:
    """Temp directory beside ``out``, then rename: an interrupted run leaves no table behind."""
    from .fetch import sha256_of

    with atomic_dir(out, expected=EMBEDDING_FILES, force=force, kind="embeddings") as tmp:
        np.save(tmp / "embeddings.npy", emb)
        meta = {**meta, "embeddings_sha256": sha256_of(tmp / "embeddings.npy")}
        pd.DataFrame({"row": np.arange(len(texts)), "text": texts}).to_parquet(tmp / "index.parquet", index=False)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def import_embeddings(
    path: str | os.PathLike,
    task: str,
    model: str,
    *,
    key: str | None = None,
    data_dir: str | os.PathLike = "data",
    task_path: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    force: bool = False,
) -> Path:
    """Embeddings made elsewhere as a task's embedding table: ``path`` (.npy, .npz, .parquet, .pt; ``key`` picks an
    entry or column) holds one row per item of the prepared ``task``, in the order of its ``items.parquet`` (the
    distinct texts in order of first appearance). Row count, numbers and finiteness are checked; the table is written
    (float32, checksummed) to ``<data_dir>/embeddings/<model>/<task>`` like an encoded one, for ``isoflow optimize``."""
    from .arrays import InputFileError, load_matrix
    from .fetch import sha256_of
    from .models.local import NAME, check_not_built_in

    if not NAME.match(model):
        raise ValueError(
            f"model name {model!r} must be lower-case letters, digits, '.', '_' or '-' (it names the output directory)"
        )
    check_not_built_in(model, "--model")
    tdata = read_task(task_path or task_dir(task, data_dir))
    texts = tdata.items["text"].astype(str).tolist()
    out = Path(out or embeddings_dir(model, task, data_dir))
    check_replaceable(out, expected=EMBEDDING_FILES, force=force)
    emb = load_matrix(path, key)
    if emb.ndim != 2:
        raise InputFileError(f"{path}: holds an array of shape {emb.shape}; embeddings are (items, dim)")
    if emb.shape[0] != len(texts):
        raise InputFileError(
            f"{path}: {emb.shape[0]} rows, but task {tdata.name} has {len(texts)} items; give one row per item, "
            f"in the order of {Path(task_path or task_dir(task, data_dir)) / 'items.parquet'}"
        )
    bad = np.flatnonzero(~np.isfinite(emb).all(axis=1))
    if len(bad):
        raise InputFileError(
            f"{path}: {len(bad)} of its {len(emb)} rows hold NaN or inf values, the first is row {int(bad[0]) + 1} "
            "(rows counted from 1); fix them before importing"
        )
    warn_repeated_rows(emb, f"{path} ({model} x {tdata.name})")
    meta = {
        "model": model,
        "source": {"path": shown_path(path), "sha256": sha256_of(Path(path)), "key": key},
        "task": tdata.name,
        "n_items": len(texts),
        "dim": int(emb.shape[1]),
        "dtype": "float32",
        "device": None,
        "batch_size": None,
        "seconds": 0.0,
        "items_sha256": items_digest(texts),
    }
    write_embeddings(out, np.ascontiguousarray(emb, dtype=np.float32), texts, meta, force=force)
    return out
