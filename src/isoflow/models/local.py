"""Your own model: a local directory, given wherever a model name is (``--model /path/to/model``).

Two kinds of folder are read, without any model hub:

* a sentence-transformers model (``modules.json``: written by ``SentenceTransformer.save``), used as it is;
* a plain Hugging Face model (``config.json`` and weights, written by ``save_pretrained``): its transformer with
  pooling over the non-padding tokens — the mean by default, or the first token's state (``pooling="cls"``).

Outputs are named by ``--model-name`` or the folder's name (never by the path). A Hugging Face hub id is turned into
such a folder first (:mod:`isoflow.models.hub`). What a run records of the model:
its path and the sha256 of its weight files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..checkpoints import SERIES, series_folder
from .sbert import ENCODE_BATCH_SIZE, ModelUnavailableError

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
POOLINGS = ("mean", "cls")
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def revision_folder(model: str | os.PathLike, revision: str) -> Path:
    """A checkpoint of a local series: ``<model>/checkpoints/<revision>`` (a pretraining run's folder, isoflow
    pretrain --checkpoints) or ``<model>/<revision>`` (a folder of checkpoint folders); a ValueError naming the
    revisions there otherwise."""
    folder = Path(model).expanduser()
    for candidate in (folder / SERIES / revision, folder / revision):
        if candidate.is_dir():
            return candidate
    series = series_folder(folder)
    held = sorted(p.name for p in series.iterdir() if p.is_dir())
    shown = ", ".join(held[:6]) + (f" and {len(held) - 6} more" if len(held) > 6 else "") if held else "none"
    raise ValueError(f"{folder}: no checkpoint {revision!r} (revisions there: {shown}); give one with --revision")


def is_local(model: str | os.PathLike) -> bool:
    """Whether ``model`` names a directory on this machine (rather than a short name or a hub id)."""
    return Path(model).expanduser().is_dir()


def local_name(model: str | os.PathLike, given: str | None = None) -> str:
    """The name outputs go under: ``given``, else the folder's name, lower-cased; never a built-in model's."""
    name = given or Path(model).expanduser().resolve().name.lower()
    if not NAME.match(name):
        raise ValueError(
            f"model name {name!r} must be lower-case letters, digits, '.', '_' or '-'; give one with --model-name"
        )
    check_not_built_in(name, "--model-name")
    return name


def check_not_built_in(name: str, option: str) -> None:
    """Outputs go under a model's name: a name of isoflow's own models would mix another model's vectors into their
    cache (and be taken for them)."""
    from . import MODELS

    if name in MODELS:
        raise ValueError(
            f"model name {name!r} is a built-in model's ({', '.join(MODELS)}); its outputs would replace that model's: "
            f"give another name with {option}"
        )


def is_sentence_transformers(path: str | os.PathLike) -> bool:
    """Whether a local folder is a sentence-transformers model (it has ``modules.json``), not a plain HF one."""
    return (Path(path).expanduser() / "modules.json").is_file()


def max_sequence_length(model, tokenizer, cap: int = 512) -> int:
    """The longest input both the model (its position embeddings) and the tokenizer take, at most ``cap``."""
    limits = (getattr(tokenizer, "model_max_length", cap), getattr(model.config, "max_position_embeddings", cap), cap)
    return min(int(x or cap) for x in limits)


def check_local(path: str | os.PathLike) -> Path:
    """The folder, checked: a sentence-transformers or Hugging Face model with weights; else one line saying what is
    missing."""
    folder = Path(path).expanduser().resolve()
    if not is_sentence_transformers(folder) and not (folder / "config.json").is_file():
        raise ModelUnavailableError(
            f"{folder}: neither a sentence-transformers model (modules.json) nor a Hugging Face model "
            "(config.json); save one with SentenceTransformer.save(DIR) or model.save_pretrained(DIR)"
        )
    if not weight_files(folder):
        raise ModelUnavailableError(
            f"{folder}: no weight files (*.safetensors or *.bin); the model was saved without its weights"
        )
    return folder


def weight_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def describe(path: str | os.PathLike) -> dict:
    """What a record says about a local model: its path, the hub id and revision it is a snapshot of (if it is), and
    the sha256 of every weight file (relative names)."""
    from ..fetch import sha256_of
    from ..provenance import shown_path
    from .hub import hub_origin

    folder = check_local(path)
    return {
        "path": shown_path(folder),
        **hub_origin(folder),
        "weights_sha256": {str(p.relative_to(folder)): sha256_of(p) for p in weight_files(folder)},
    }


UNKNOWN_WARN = 0.5  # share of word pieces mapped to the unknown token, above which a tokenizer does not fit the text


def warn_unknown_tokens(tokenizer, texts: list[str], what: str, sample: int = 2000) -> float:
    """Warn when ``tokenizer`` maps most of the texts' word pieces to its unknown token (a tokenizer from another
    model, a vocabulary of another language): the vectors would say little about the texts. Returns the share (on
    at most ``sample`` texts)."""
    import logging

    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None or not texts:
        return 0.0  # byte-level tokenizers (GPT-2's) have no unknown token
    ids = [i for enc in tokenizer(list(texts[:sample]), add_special_tokens=False)["input_ids"] for i in enc]
    share = sum(i == unk for i in ids) / max(len(ids), 1)
    if share > UNKNOWN_WARN:
        logging.getLogger(__name__).warning(
            "%s: its tokenizer maps %.0f %% of the word pieces to its unknown token %s: the vectors say little about "
            "the text; is it the model's own tokenizer?",
            what,
            100 * share,
            tokenizer.unk_token,
        )
    return share


# The dtype a Hugging Face model's weights are loaded in (--dtype): auto, the checkpoint's own (transformers' default)
MODEL_DTYPES = ("auto", "float32", "bfloat16", "float16")


def weights_dtype(dtype: str = "auto") -> dict:
    """``from_pretrained``'s arguments that load a model's weights in ``dtype`` (``auto``: the checkpoint's own, as
    transformers does by default): each tensor is read into that dtype, not a float32 copy of the model first."""
    import torch

    if dtype not in MODEL_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(MODEL_DTYPES)}; got {dtype!r}")
    return {} if dtype == "auto" else {"dtype": getattr(torch, dtype)}


def load_hf(path: str | os.PathLike, device: str = "cpu", dtype: str = "auto"):
    """(model, tokenizer) of a Hugging Face model folder, in evaluation mode on ``device``, its weights in ``dtype``
    (:func:`weights_dtype`); a tokenizer without a padding token (GPT-2) pads with its end-of-text token (padding is
    masked out)."""
    from transformers import AutoModel, AutoTokenizer

    folder = check_local(path)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return AutoModel.from_pretrained(str(folder), **weights_dtype(dtype)).to(device).eval(), tokenizer


def encode_local(
    path: str | os.PathLike,
    texts: list[str],
    *,
    device: str = "cpu",
    pooling: str = "mean",
    batch_size: int = ENCODE_BATCH_SIZE,
    progress: bool = False,
    dtype: str = "auto",
):
    """float32 (n, d) embeddings of ``texts`` by a Hugging Face model folder: its last hidden states pooled over the
    non-padding tokens (``mean``, or the first token: ``cls``). (A sentence-transformers folder is encoded as it was
    saved: :class:`isoflow.models.loaders.SentenceTransformersLoader`.)"""
    import numpy as np
    import torch

    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}; got {pooling!r}")
    folder = check_local(path)
    model, tokenizer = load_hf(folder, device, dtype)
    warn_unknown_tokens(tokenizer, texts, str(folder))
    limit = max_sequence_length(model, tokenizer)
    parts = []
    with torch.no_grad():
        for i in range(0, len(texts), batch_size):
            enc = tokenizer(
                texts[i : i + batch_size], padding=True, truncation=True, max_length=limit, return_tensors="pt"
            ).to(device)
            h = model(**enc).last_hidden_state.float()  # pooled in float32 whatever the weights' dtype
            if pooling == "cls":
                parts.append(h[:, 0].float().cpu().numpy())
            else:
                m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
                parts.append(((h * m).sum(1) / m.sum(1).clamp(min=1e-9)).float().cpu().numpy())
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
