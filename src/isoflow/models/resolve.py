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

``revision`` (``--revision``) names a checkpoint: of a hub id (a branch or tag: Pythia's ``step1000``; its snapshot at
that revision), or of a local checkpoint series (``<folder>/checkpoints/<revision>``, what ``isoflow pretrain
--checkpoints`` writes, or ``<folder>/<revision>``). Outputs then go under ``--model-name``, else the name above with
``-<revision>``; the record names the revision asked for (``revision_name``) beside what it resolved to.
"""

from __future__ import annotations

import os
from pathlib import Path

from .loaders import HuggingFaceLoader, Loader, SentenceTransformersLoader, StaticLoader, claiming_kinds
from .spec import ModelSpec

# What resolve_model returns: the loader of the model's kind (isoflow.models.loaders)
ResolvedModel = Loader


def resolve_model(
    model: str | os.PathLike | ModelSpec,
    *,
    cache: str | os.PathLike = "data/raw",
    mirror=None,
    progress=None,
) -> ResolvedModel:
    """See the module docstring; ``model``: a name or path, or a :class:`~isoflow.models.spec.ModelSpec` with the
    outputs' name, a revision and a dtype. A GGUF file is de-quantised once into ``cache`` (``progress``: a function
    given a line before that minute-long step); its record names the file, its sha256 and its quantisation. The dtype:
    the weights' dtype for a Hugging Face model (``auto``: the checkpoint's own; its record names any other)."""
    spec = ModelSpec.of(model)
    if spec.revision is not None:
        resolved = _at_revision(spec.model, spec.name, spec.revision, {"cache": cache, "mirror": mirror})
    else:
        resolved = _resolved(spec.model, spec.name, cache, mirror, progress)
    return _placed(_in_dtype(resolved, spec.dtype, cache, progress), spec.device_map)


DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")  # accelerate's strategies (transformers' device_map)


def _placed(resolved: ResolvedModel, device_map: str | None) -> ResolvedModel:
    """The loader with its weights spread over the devices by ``device_map`` (None: on the run's one device), named in
    its record; refused in one line for a kind that is not a Hugging Face model."""
    from dataclasses import replace

    if device_map is None:
        return resolved
    if device_map not in DEVICE_MAPS:
        raise ValueError(f"--device-map must be one of {', '.join(DEVICE_MAPS)}; got {device_map!r}")
    if not isinstance(resolved, HuggingFaceLoader):
        raise ValueError(
            f"--device-map {device_map}: {resolved.name} is a {resolved.kind} model, loaded whole; --device-map "
            "applies to Hugging Face model folders, hub ids and GGUF files"
        )
    return replace(resolved, device_map=device_map, source={**resolved.source, "device_map": device_map})


def _in_dtype(resolved: ResolvedModel, dtype: str, cache, progress=None) -> ResolvedModel:
    """The loader with its weights' dtype, named in its record; refused in one line for a kind without weights to
    cast (static vectors, a sentence-transformers model: loaded as saved). A folder saved in float32 and asked in a
    narrower dtype loads from its copy in that dtype, made once under ``cache`` (:mod:`isoflow.models.narrowed`;
    the record names it)."""
    from dataclasses import replace

    from .local import MODEL_DTYPES

    if dtype not in MODEL_DTYPES:
        raise ValueError(f"--dtype must be one of {', '.join(MODEL_DTYPES)}; got {dtype!r}")
    if dtype == "auto":
        return resolved
    if not isinstance(resolved, HuggingFaceLoader):
        raise ValueError(
            f"--dtype {dtype}: {resolved.name} is a {resolved.kind} model, loaded as it was saved; --dtype applies to "
            "Hugging Face model folders, hub ids and GGUF files"
        )
    from .narrowed import narrowed_folder, saved_wider

    source = {**resolved.source, "dtype": dtype}
    if Path(resolved.load).is_dir() and saved_wider(resolved.load, dtype):
        folder = narrowed_folder(resolved.load, dtype, cache, progress)
        return replace(resolved, load=str(folder), dtype=dtype, source={**source, "narrowed_copy": str(folder)})
    return replace(resolved, dtype=dtype, source=source)


def _resolved(model: str, model_name, cache, mirror, progress) -> ResolvedModel:
    """The loader of what ``model`` names, at its one version (module docstring)."""
    from .gguf import GGUF_MODELS, dequantised_folder, gguf_name, hub_gguf, hub_gguf_file, is_gguf_file
    from .hub import hub_folder, hub_name, is_hub_id
    from .local import check_not_built_in, describe, is_local, local_name
    from .sbert import SENTENCE_MODELS
    from .static import STATIC_MODELS

    model = str(model)
    where = {"cache": cache, "mirror": mirror}
    for kind in claiming_kinds():  # a kind added as one subclass of Loader: asked first
        if kind.claims(model):
            return kind.resolved(model, model_name, **where)
    if model in GGUF_MODELS:
        spec = GGUF_MODELS[model]
        folder = dequantised_folder(spec.locate(cache, mirror), cache, progress)
        if model_name is not None and model_name != model:
            check_not_built_in(local_name(folder, model_name), "--model-name")
        name = model_name or model
        return HuggingFaceLoader(str(folder), name, _with_gguf(describe(folder), folder, built_in=spec), **where)
    if model in SENTENCE_MODELS:
        return SentenceTransformersLoader(model, model, None, **where)
    if model in STATIC_MODELS:
        return StaticLoader(model, model, None, **where)
    gguf_file = None
    if is_gguf_file(model):
        gguf_file = Path(model).expanduser()
    elif hub_gguf(model) is not None:
        gguf_file = hub_gguf_file(*hub_gguf(model))
    if gguf_file is not None:
        folder = dequantised_folder(gguf_file, cache, progress)
        name = local_name(folder, model_name or gguf_name(gguf_file))
        return HuggingFaceLoader(str(folder), name, _with_gguf(describe(folder), folder), **where)
    if not is_local(model) and is_hub_id(model):
        folder = hub_folder(model)
        return _folder_loader(folder)(
            str(folder), local_name(folder, model_name or hub_name(model)), describe(folder), **where
        )
    if is_local(model):
        return _folder_loader(model)(model, local_name(model, model_name), describe(model), **where)
    return Loader(model, model, None, **where)  # unknown: asked anything, it names the known models


def _at_revision(model: str, model_name: str | None, revision: str, where: dict) -> ResolvedModel:
    """A checkpoint of a local series or of a hub id (module docstring); anything else is refused in one line."""
    from . import MODELS
    from .gguf import hub_gguf, is_gguf_file
    from .hub import hub_folder, hub_name, is_hub_id
    from .local import describe, is_local, local_name, revision_folder

    if model in MODELS or is_gguf_file(model) or hub_gguf(model) is not None:
        folder = None
    elif is_local(model):
        folder, name = revision_folder(model, revision), local_name(model)
    elif is_hub_id(model):
        folder, name = hub_folder(model, revision), hub_name(model)
    else:
        folder = None
    if folder is None:
        raise ValueError(
            f"--revision {revision} names a checkpoint of a hub id or of a local checkpoint series; {model!r} is "
            "neither (a built-in model or a GGUF file has one version)"
        )
    source = {**describe(folder), "revision_name": revision}
    return _folder_loader(folder)(
        str(folder), local_name(folder, model_name or f"{name}-{revision.lower()}"), source, **where
    )


def _folder_loader(folder) -> type[Loader]:
    """A folder's kind: sentence-transformers (``modules.json``: ``SentenceTransformer.save``) or Hugging Face."""
    from .local import is_sentence_transformers

    return SentenceTransformersLoader if is_sentence_transformers(folder) else HuggingFaceLoader


def _with_gguf(source: dict, folder: Path, built_in=None) -> dict:
    """A de-quantised folder's record: the GGUF file's (name, sha256, quantisation) beside the folder's weights."""
    from .gguf import gguf_record

    gguf = gguf_record(folder) or {}
    if built_in is not None:
        gguf = {**gguf, "built_in": built_in.name, "upstream": built_in.upstream, "license": built_in.license}
    return {**source, "gguf": gguf}


def input_files(path: str | os.PathLike) -> list[str]:
    """The files a workflow job that loads the model at ``path`` reads (its inputs, for the rules): a GGUF file itself
    (the job de-quantises it, once); a folder's weight files; its config.json while the folder is not there yet."""
    from .local import weight_files

    path = Path(path)
    if path.suffix.lower() == ".gguf":
        return [str(path)]
    found = weight_files(path) if path.is_dir() else []
    return sorted(str(p) for p in found) or [str(path / "config.json")]
