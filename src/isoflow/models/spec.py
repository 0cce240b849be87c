"""What names a model for a run, as one object from the command line to the loader: :class:`ModelSpec`.

A run is given a model as ``--model`` (a built-in name, a folder, a hub id, a GGUF file) with four things that travel
with it everywhere: the name its outputs go under (``--model-name``), the checkpoint (``--revision``: a hub branch or
a local series' checkpoint), the dtype of its weights (``--dtype``) and their placement across devices
(``--device-map``: one device, or a model too large for one spread over several). They are one value, so that no
function takes some of them and forgets another; :func:`isoflow.models.resolve.resolve_model` turns it into a
loader.

Examples
--------
>>> from isoflow.models.spec import ModelSpec
>>> ModelSpec.of("gpt2")
ModelSpec(model='gpt2', name=None, revision=None, dtype='auto', device_map=None)
>>> ModelSpec.of(ModelSpec("EleutherAI/pythia-160m", revision="step1000")).revision
'step1000'
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """``model`` (what ``--model`` names), ``name`` (the name its outputs go under; None: the model's own, with
    ``-<revision>`` for a checkpoint), ``revision`` (None: the model as it is), ``dtype`` of its weights (``auto``:
    the checkpoint's own) and ``device_map`` (None: the whole model on the run's device; ``auto``, ``balanced``,
    ``sequential``: spread by accelerate over the devices there are, as transformers' ``device_map``)."""

    model: str
    name: str | None = None
    revision: str | None = None
    dtype: str = "auto"
    device_map: str | None = None

    @classmethod
    def of(cls, model: str | os.PathLike | ModelSpec) -> ModelSpec:
        """``model`` as a spec: a spec as it is, a name or path with nothing else set."""
        return model if isinstance(model, ModelSpec) else cls(str(model))
