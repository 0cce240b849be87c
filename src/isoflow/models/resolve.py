"""What ``--model`` names, turned into something to load and a name for the outputs — one function for every command
that takes a model (``layers``, ``encode``, ``finetune``) and for the workflow's ``own:`` models.

==========================================  ==============================  =======================================
``--model``                                 loaded from                     outputs named by
==========================================  ==============================  =======================================
a built-in SBERT or static name             its own loader (isoflow.models)  the name
a built-in GGUF name (``smollm2-135m``)     its de-quantised folder          the name
a local folder                              the folder                       ``--model-name``, else the folder's name
a ``.gguf`` file                            its de-quantised folder          ``--model-name``, else the file's stem
``org/repo/file.gguf`` (hub + GGUF file)    its de-quantised folder          ``--model-name``, else the file's stem
a hub id (``gpt2``, ``org/name``)           its snapshot folder              ``--model-name``, else the id's last part
==========================================  ==============================  =======================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ResolvedModel:
    """``load``: a built-in name or a local Hugging Face / sentence-transformers folder; ``name``: what outputs go
    under; ``source``: what a run record says of a folder (None for a built-in SBERT or static model)."""

    load: str
    name: str
    source: dict | None

    @property
    def local(self) -> bool:
        return self.source is not None


def resolve_model(
    model: str | os.PathLike,
    model_name: str | None = None,
    *,
    cache: str | os.PathLike = "data/raw",
    mirror=None,
    progress=None,
) -> ResolvedModel:
    """See the module docstring. A GGUF file is de-quantised once into ``cache`` (``progress``: a function given a
    line before that minute-long step); its record names the file, its sha256 and its quantisation."""
    from . import MODELS
    from .gguf import GGUF_MODELS, dequantised_folder, gguf_name, hub_gguf, hub_gguf_file, is_gguf_file
    from .hub import hub_folder, hub_name, is_hub_id
    from .local import check_not_built_in, describe, is_local, local_name

    model = str(model)
    if model in GGUF_MODELS:
        spec = GGUF_MODELS[model]
        folder = dequantised_folder(spec.locate(cache, mirror), cache, progress)
        if model_name is not None and model_name != model:
            check_not_built_in(local_name(folder, model_name), "--model-name")
        name = model_name or model
        return ResolvedModel(str(folder), name, _with_gguf(describe(folder), folder, built_in=spec))
    if model in MODELS:
        return ResolvedModel(model, model, None)
    gguf_file = None
    if is_gguf_file(model):
        gguf_file = Path(model).expanduser()
    elif hub_gguf(model) is not None:
        gguf_file = hub_gguf_file(*hub_gguf(model))
    if gguf_file is not None:
        folder = dequantised_folder(gguf_file, cache, progress)
        name = local_name(folder, model_name or gguf_name(gguf_file))
        return ResolvedModel(str(folder), name, _with_gguf(describe(folder), folder))
    if not is_local(model) and is_hub_id(model):
        folder = hub_folder(model)
        return ResolvedModel(str(folder), local_name(folder, model_name or hub_name(model)), describe(folder))
    if is_local(model):
        return ResolvedModel(model, local_name(model, model_name), describe(model))
    return ResolvedModel(model, model, None)  # unknown: the command's own check says so, naming what is known


def _with_gguf(source: dict, folder: Path, built_in=None) -> dict:
    """A de-quantised folder's record: the GGUF file's (name, sha256, quantisation) beside the folder's weights."""
    from .gguf import gguf_record

    gguf = gguf_record(folder) or {}
    if built_in is not None:
        gguf = {**gguf, "built_in": built_in.name, "upstream": built_in.upstream, "license": built_in.license}
    return {**source, "gguf": gguf}
