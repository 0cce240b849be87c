"""A Hugging Face hub id wherever a model is taken (``--model bert-base-uncased``, ``own.models.<name>.hub: gpt2``).

The id becomes a local folder, after which it is used exactly like your own model folder:

1. the Hugging Face cache (``$HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``) when it holds a snapshot of the id
   — this works with the hub switched off (``HF_HUB_OFFLINE=1``), so a cluster node without internet uses what a login
node downloaded; 2. otherwise a download into that cache, when the hub can be reached (configuration, tokenizer and
   safetensors files only; ``pytorch_model.bin`` where a model has no safetensors);
3. otherwise one line saying that the id is neither cached nor reachable, and what to do.

Outputs are named by ``--model-name`` or the id's last part, lower-cased (``bert-base-uncased``,
``all-minilm-l6-v2``); a record names the id and the snapshot's revision (its commit) beside the weights' sha256.
At a named revision (``--revision step1000``: a branch or tag, as Pythia's and OLMo's checkpoints are published), the
outputs go under ``<name>-<revision>`` and the record names the revision asked for (``revision_name``) beside the
commit it resolved to.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .sbert import ModelUnavailableError

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
_SNAPSHOT = re.compile(r"models--(?P<id>[^/]+)/snapshots/(?P<rev>[^/]+)/?$")
PATTERNS = (
    "*.json",
    "*.txt",
    "*.model",
    "*.safetensors",
    "tokenizer*",
    "vocab*",
    "merges*",
    "spiece*",
    "sentencepiece*",
)


def is_hub_id(model: str) -> bool:
    """Whether ``model`` reads as a hub id (``name`` or ``org/name``) rather than a path on this machine."""
    return not Path(model).expanduser().exists() and bool(HUB_ID.match(str(model))) and not str(model).startswith(".")


def hub_name(model_id: str) -> str:
    """The name outputs go under: the id's last part, lower-cased."""
    return model_id.rsplit("/", 1)[-1].lower()


def cache_dir() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def cached_folder(model_id: str, revision: str | None = None) -> Path | None:
    """The snapshot folder of ``model_id`` at ``revision`` in the Hugging Face cache, or None where it is not cached
    (nothing is downloaded)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(model_id, revision=revision, local_files_only=True))
    except LocalEntryNotFoundError:
        return None


def hub_folder(model_id: str, revision: str | None = None) -> Path:
    """The local snapshot folder of ``model_id`` at ``revision`` (a branch, tag or commit: Pythia's ``step1000``,
    OLMo's ``stepN-tokensM``; default the main branch): cached, else downloaded; else :class:`ModelUnavailableError`."""
    from huggingface_hub import snapshot_download

    from .sbert import hub_reachable

    cached = cached_folder(model_id, revision)
    if cached is not None:
        return cached
    if not hub_reachable():
        from . import MODELS

        at = f" at revision {revision!r}" if revision else ""
        option = f" --revision {revision}" if revision else ""
        raise ModelUnavailableError(
            f"{model_id!r}{at} is not one of isoflow's models ({', '.join(MODELS)}), not a folder, not in the Hugging "
            f"Face cache ({cache_dir()}), and the hub cannot be reached (offline, or HF_HUB_OFFLINE is set): download "
            f"it where the hub is reachable (`hf download {model_id}{option}`, the same HF_HUB_CACHE) or give a "
            "local model folder"
        )
    try:
        folder = Path(snapshot_download(model_id, revision=revision, allow_patterns=list(PATTERNS)))
        if not any(folder.glob("*.safetensors")):
            folder = Path(
                snapshot_download(model_id, revision=revision, allow_patterns=[*PATTERNS, "pytorch_model.bin"])
            )
    except Exception as exc:  # an unknown id, a gated model, a dropped connection: one line
        raise ModelUnavailableError(
            f"{model_id!r} could not be downloaded from the hub ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''})"
        ) from exc
    return folder


def hub_origin(folder: str | os.PathLike) -> dict:
    """``{"hub_id", "revision"}`` when ``folder`` is a snapshot in a Hugging Face cache, else ``{}``."""
    match = _SNAPSHOT.search(Path(folder).resolve().as_posix())
    if not match:
        return {}
    return {"hub_id": match.group("id").replace("--", "/"), "revision": match.group("rev")}
