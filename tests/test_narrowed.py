"""A float32 folder loaded in bf16/fp16 through its narrowed copy (isoflow.models.narrowed): the same weights bit for
bit as transformers' own conversion, made once, named in the record."""

from __future__ import annotations

import json

import pytest
import torch


@pytest.fixture
def float32_gpt2(tmp_path):
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(vocab_size=300, n_positions=32, n_embd=16, n_layer=2, n_head=2))
    with torch.no_grad():
        model.wte.weight.mul_(1 + 1 / 3)  # values that do not round trip through 16 bits
    model.save_pretrained(tmp_path / "f32")
    return tmp_path / "f32"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("chunk", [None, 64])
def test_the_narrowed_copy_loads_the_weights_transformers_conversion_gives(
    float32_gpt2, tmp_path, monkeypatch, dtype, chunk
):
    """Loaded in ``dtype`` from the float32 folder (transformers converts) and from its narrowed copy: every tensor
    equal bit for bit, in ``dtype``; so also when each tensor is converted in 64-byte parts."""
    from transformers import AutoModel

    from isoflow.models import narrowed
    from isoflow.models.shapes import safetensors_header

    if chunk is not None:
        monkeypatch.setattr(narrowed, "CHUNK_BYTES", chunk)
    direct = AutoModel.from_pretrained(float32_gpt2, dtype=getattr(torch, dtype)).state_dict()
    folder = narrowed.narrowed_folder(float32_gpt2, dtype, tmp_path / "cache")
    copied = AutoModel.from_pretrained(folder, dtype=getattr(torch, dtype)).state_dict()
    assert direct.keys() == copied.keys()
    assert all(copied[k].dtype == getattr(torch, dtype) and torch.equal(direct[k], copied[k]) for k in direct)
    assert not narrowed.saved_wider(folder, dtype) and narrowed.saved_wider(float32_gpt2, dtype)
    source, _, meta = safetensors_header(float32_gpt2 / "model.safetensors")
    written, _, meta_written = safetensors_header(folder / "model.safetensors")
    half = {
        k: (t["data_offsets"][1] - t["data_offsets"][0]) // (2 if t["dtype"] == "F32" else 1) for k, t in source.items()
    }
    assert {k: t["data_offsets"][1] - t["data_offsets"][0] for k, t in written.items()} == half and meta_written == meta
    assert (folder / "config.json").read_text() == (float32_gpt2 / "config.json").read_text()


def test_the_copy_is_made_once_and_again_when_the_weights_change(float32_gpt2, tmp_path):
    from isoflow.models.narrowed import RECORD, narrowed_folder

    told = []
    first = narrowed_folder(float32_gpt2, "bfloat16", tmp_path / "cache", told.append)
    made = (first / RECORD).stat().st_mtime_ns
    assert narrowed_folder(float32_gpt2, "bfloat16", tmp_path / "cache", told.append) == first
    assert (first / RECORD).stat().st_mtime_ns == made and len(told) == 1 and "once, into" in told[0]
    weights = float32_gpt2 / "model.safetensors"
    weights.write_bytes(weights.read_bytes())  # the same bytes written again: another time, another copy
    assert narrowed_folder(float32_gpt2, "bfloat16", tmp_path / "cache", told.append) != first and len(told) == 2
    assert json.loads((first / RECORD).read_text())["from"] == str(float32_gpt2.resolve())


def test_a_model_asked_narrower_than_saved_resolves_to_its_copy(float32_gpt2, tmp_path):
    """resolve_model with --dtype bfloat16: the float32 folder's copy, named in the record; a folder saved in bf16,
    or asked in float32, loads as it is."""
    from isoflow.models.resolve import resolve_model
    from isoflow.models.spec import ModelSpec

    cache = tmp_path / "cache"
    narrowed = resolve_model(ModelSpec(str(float32_gpt2), "tiny", None, "bfloat16", None), cache=cache)
    assert narrowed.load == narrowed.source["narrowed_copy"] and str(cache) in narrowed.load
    assert narrowed.dtype == "bfloat16" and narrowed.source["dtype"] == "bfloat16"
    same = resolve_model(ModelSpec(str(float32_gpt2), "tiny", None, "float32", None), cache=cache)
    assert "narrowed_copy" not in same.source and same.load == str(float32_gpt2)
    again = resolve_model(ModelSpec(narrowed.load, "tiny", None, "bfloat16", None), cache=cache)
    assert "narrowed_copy" not in again.source
