"""A model's shape known before it is loaded — its parameters, width, hidden states and the bytes a parameter takes as
saved — so that a workflow can plan a run's memory, disk and time (:mod:`isoflow.layers.plan`) without loading
anything: the published shapes of the built-in models, a Hugging Face folder's ``config.json`` and safetensors
headers, or the shape a pretraining run's settings give.

Examples
--------
>>> from isoflow.models.shapes import PUBLISHED, transformer_shape
>>> PUBLISHED["minilm"].weight_bytes(), PUBLISHED["minilm"].states
(90852864, 7)
>>> transformer_shape(vocab=8192, dim=256, layers=4, ffn=1024, positions=128).parameters
5289472
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "F32": 4, "F16": 2, "BF16": 2, "F64": 8}


@dataclass(frozen=True)
class ModelShape:
    """What sets a run's cost: ``parameters``, ``dim`` (the hidden states' width), ``states`` (hidden states: the
    input embeddings and one per block), ``saved_bytes`` per parameter as the weights load by default, and
    ``embeddings``: the parameters no point is multiplied by — the token, position and type embeddings, read by index,
    and an output head the base model's forward pass never reaches (what the encoding's arithmetic leaves out)."""

    parameters: int
    dim: int
    states: int
    saved_bytes: int = 4
    embeddings: int = 0

    @property
    def multiplied(self) -> int:
        """The parameters each point is multiplied by: one multiply-add each a point in the forward pass."""
        return self.parameters - self.embeddings

    def weight_bytes(self, dtype: str = "auto") -> int:
        """The weights' bytes as loaded: in their saved dtype (``auto``) or the one named."""
        return self.parameters * (self.saved_bytes if dtype == "auto" else BYTES[dtype])


def transformer_shape(*, vocab: int, dim: int, layers: int, ffn: int, positions: int) -> ModelShape:
    """A BERT- or GPT-2-style encoder's shape from its sizes (isoflow's pretraining builds these): embeddings, per
    block four d × d projections, the feed-forward pair and two layer norms (biases included), a final norm; the
    output embedding tied: GPT-2's count exactly; BERT's has 2 · d more (its two type embeddings)."""
    block = 4 * (dim * dim + dim) + 2 * dim * ffn + ffn + dim + 4 * dim
    embeddings = (vocab + positions) * dim
    return ModelShape(embeddings + layers * block + 2 * dim, dim, layers + 1, 4, embeddings)


# The built-in models' shapes as published (their hub configs; the parameters counted from them as transformers
# builds each model, the sentence encoders' poolers included; tests/test_layer_plan.py counts MiniLM's in its package's
# safetensors). The GGUF models load de-quantised, in float32; GloVe is its 400,000 × 50 table, one state.
# The embeddings: vocabulary, positions and types times the width, and mpnet's relative attention bias (32 buckets ×
# 12 heads): what the model's nn.Embedding modules hold (tests/test_layer_plan.py counts them).
PUBLISHED: dict[str, ModelShape] = {
    "minilm": ModelShape(22_713_216, 384, 7, 4, (30_522 + 512 + 2) * 384),
    "mpnet": ModelShape(109_486_464, 768, 13, 4, (30_527 + 514) * 768 + 32 * 12),
    "distilroberta": ModelShape(82_118_400, 768, 7, 4, (50_265 + 514 + 1) * 768),
    "smollm2-135m": ModelShape(134_515_008, 576, 31, 4, 49_152 * 576),
    "gemma3-270m": ModelShape(268_098_176, 640, 19, 4, 262_144 * 640),
    "glove-50d": ModelShape(400_000 * 50, 50, 1, 4, 400_000 * 50),
}
# A safetensors tensor no point is multiplied by, by its name: the input embeddings (BERT's, GPT-2's wte/wpe,
# Llama's embed_tokens, GPT-NeoX's embed_in, MPNet's relative attention bias) and an output head (lm_head, GPT-NeoX's
# embed_out)
EMBEDDING_TENSOR = re.compile(
    r"(embeddings\.weight|embed_(tokens|in|out)\.|relative_attention_bias|(^|\.)(wte|wpe|lm_head)\.)"
)


def module_shape(model, dim: int, states: int) -> ModelShape:
    """The shape of a built model (a torch module, loaded or on the meta device) with ``dim``-wide hidden states and
    ``states`` of them: its parameters, their bytes as held, and its embeddings — the parameters of its
    ``nn.Embedding`` modules, read by index."""
    import torch  # here, not above: a plan reads shapes without torch

    parameters = sum(p.numel() for p in model.parameters())
    embeddings = sum(p.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters())
    return ModelShape(parameters, dim, states, next(model.parameters()).element_size(), embeddings)


def folder_shape(folder: str | os.PathLike) -> ModelShape | None:
    """A Hugging Face model folder's shape, read without loading it: width and blocks from ``config.json``,
    parameters and their bytes from the safetensors files' headers (None where the folder has no config or no
    safetensors file: nothing to read the shape from)."""
    folder = Path(folder)
    files = sorted(folder.glob("*.safetensors"))
    if not (folder / "config.json").is_file() or not files:
        return None
    config = json.loads((folder / "config.json").read_text())
    config = config.get("text_config", config)  # a multimodal wrapper's language model
    dim = next((config[k] for k in ("hidden_size", "d_model", "n_embd") if k in config), None)
    blocks = next((config[k] for k in ("num_hidden_layers", "n_layer", "num_layers") if k in config), None)
    if dim is None or blocks is None:
        return None
    headers = [safetensors_header(f)[0] for f in files]
    floats = [(name, math.prod(t["shape"]), BYTES[t["dtype"]]) for h in headers for name, t in h.items()
              if t["dtype"] in BYTES]  # fmt: skip
    parameters = sum(n for _, n, _ in floats)
    saved = round(sum(n * b for _, n, b in floats) / parameters) if parameters else 4
    embeddings = sum(n for name, n, _ in floats if EMBEDDING_TENSOR.search(name))
    return ModelShape(parameters, int(dim), int(blocks) + 1, saved, embeddings)


def safetensors_header(path: str | os.PathLike) -> tuple[dict, int, dict | None]:
    """A safetensors file's tensors (name -> dtype, shape, data offsets), where its data starts and its metadata: its
    first 8 bytes are the JSON header's length, the header follows, then the data."""
    with open(path, "rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(length))
    metadata = header.pop("__metadata__", None)
    return header, 8 + length, metadata
