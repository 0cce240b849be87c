"""The memory and disk formula of a layer run (isoflow.layers.cost) against what the run's own objects hold."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoflow.layers.cost import RUNTIME_BYTES, RunShape, disk, peak_memory, store_bytes
from isoflow.layers.store import LayerStore
from isoflow.layers.streamed import LayerStatistics, TypeIndex

SHAPE = RunShape(
    weight_bytes=10_000_000, dim=16, states=5, measured=3, points=2_000, types=1_500, kept=300, pair_points=100,
    batch_points=40,
)  # fmt: skip


def test_the_sums_a_run_holds_are_what_the_formula_counts(tmp_path):
    """One layer's sums after 1,500 types, its types' sums in a file beside the store (as a run's): the two d × d
    float64 scatters in memory — the formula's encoding stage less the store and the batch, per measured layer — and
    1,500 float64 rows on disk, the formula's disk less the store, per measured layer."""
    d, types = SHAPE.dim, np.array([f"w{k}" for k in range(SHAPE.types)], dtype=object)
    index, stats = TypeIndex(), LayerStatistics(d, tmp_path / "types0.f64")
    x = torch.randn(SHAPE.types, d, generator=torch.Generator().manual_seed(0))
    for rows in (slice(0, 700), slice(700, SHAPE.types)):
        stats.update(x[rows], index.codes(types[rows]), torch.ones(rows.stop - rows.start, dtype=torch.bool))
    held = stats.all.scatter.nbytes + stats.later.scatter.nbytes + sum(b.nbytes for b in stats.types.blocks)
    parts = peak_memory(SHAPE)
    batch = SHAPE.batch_points * d * (4 * SHAPE.states + 16 + 16)  # and the batch's types' rows, read and added to
    assert parts["stage_encoding"] - store_bytes(SHAPE) - batch == SHAPE.measured * held == 3 * 2 * d * d * 8
    on_disk = (tmp_path / "types0.f64").stat().st_size
    assert disk(SHAPE) - store_bytes(SHAPE) == SHAPE.measured * on_disk and on_disk == 1_500 * d * 8


def test_the_store_s_bytes_are_the_formula_s_disk(tmp_path):
    """The store's files hold the formula's bytes of points (each beside a .npy header of a few dozen bytes)."""
    with LayerStore(SHAPE.measured, SHAPE.kept, SHAPE.dim, tmp_path) as store:
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        points = sum(np.load(p, mmap_mode="r").nbytes for p in files)
        headers = sum(p.stat().st_size for p in files) - points
        assert store.on_disk and len(files) == SHAPE.measured
    assert points == store_bytes(SHAPE) == 3 * 300 * 16 * 4 and 0 < headers <= 3 * 4096


def test_the_peak_is_the_runtime_the_weights_and_the_largest_stage():
    parts = peak_memory(SHAPE)
    stages = [v for k, v in parts.items() if k.startswith("stage_")]
    assert parts["peak"] == RUNTIME_BYTES + SHAPE.weight_bytes + max(stages)
    # A run keeping every point (states: all) holds no sums, and its store grows with the points
    every = RunShape(**{**SHAPE.__dict__, "kept": SHAPE.points, "streamed": False})
    batch = SHAPE.batch_points * SHAPE.dim * (4 * SHAPE.states + 16)
    assert disk(every) == 3 * 2_000 * 16 * 4 and peak_memory(every)["stage_encoding"] == disk(every) + batch


def test_a_run_that_would_not_fit_the_memory_says_so_before_it_encodes(tiny_gpt2, tmp_path, monkeypatch):
    """The formula's peak for the run at hand (the weights as loaded, the points and types its sentences give)
    against the memory available: refused in one line naming both and the fixes, nothing written; with room, it
    runs."""
    import isoflow.layers.run as layers_run
    from isoflow.layers import LayerSettings, run_layers
    from isoflow.layers.store import NotEnoughSpace

    text = tmp_path / "text.txt"
    text.write_text("the cat sat on the mat\nthe dog ran in the park\n" * 20)
    settings = LayerSettings(max_tokens=100, sample_cap=50, k_max=2, kmeans_samples=1, kmeans_starts=1, k_lid=5)
    kw = dict(settings=settings, device="cpu", progress=False, data_dir=tmp_path)
    from isoflow.layers.cost import RUNTIME_BYTES
    from isoflow.models.shapes import folder_shape

    room = RUNTIME_BYTES + folder_shape(tiny_gpt2).weight_bytes() + 1  # the weights fit, the run does not
    monkeypatch.setattr(layers_run, "available_memory", lambda: room)
    with pytest.raises(
        NotEnoughSpace, match=r"^this layer run would hold about 0\.5 GB \(isoflow\.layers\.cost"
    ) as refused:
        run_layers(str(tiny_gpt2), str(text), out=tmp_path / "run", **kw)
    assert "0.5 GB is available; keep only the samples' points (--states sample)" in str(refused.value)
    assert not (tmp_path / "run").exists()
    monkeypatch.setattr(layers_run, "available_memory", lambda: 10**12)
    assert (run_layers(str(tiny_gpt2), str(text), out=tmp_path / "run", **kw) / "meta.json").is_file()


@pytest.mark.parametrize("dtype", ["auto", "bfloat16"])
def test_weights_that_would_not_fit_are_refused_before_they_load(tiny_gpt2, tmp_path, monkeypatch, dtype):
    """The folder's weights, sized from its safetensors headers in the dtype asked, with the runtime, against the
    memory available: refused in one line naming the model, the sizes and the fixes, before any weight is read."""
    import isoflow.layers.run as layers_run
    import isoflow.models.loaders as loaders
    from isoflow.layers import LayerSettings, run_layers
    from isoflow.layers.cost import RUNTIME_BYTES
    from isoflow.layers.store import NotEnoughSpace
    from isoflow.models.shapes import folder_shape
    from isoflow.models.spec import ModelSpec

    text = tmp_path / "text.txt"
    text.write_text("the cat sat on the mat\n" * 20)
    weights = folder_shape(tiny_gpt2).weight_bytes(dtype)
    assert weights == folder_shape(tiny_gpt2).parameters * {"auto": 4, "bfloat16": 2}[dtype]  # saved in float32
    monkeypatch.setattr(layers_run, "available_memory", lambda: RUNTIME_BYTES + weights - 1)
    monkeypatch.setattr(loaders, "_from_pretrained", lambda *a, **k: pytest.fail("the weights were loaded"))
    model = ModelSpec(str(tiny_gpt2), "tiny", None, dtype, None)
    with pytest.raises(
        NotEnoughSpace, match=rf"^tiny: its weights alone take {weights / 1e9:.1f} GB as loaded \({dtype}\)"
    ) as refused:
        run_layers(model, str(text), out=tmp_path / "run", settings=LayerSettings(max_tokens=50), device="cpu",
                   progress=False, data_dir=tmp_path)  # fmt: skip
    assert "load them in bfloat16 (--dtype bfloat16)" in str(refused.value) and not (tmp_path / "run").exists()


def test_a_shape_at_settings_takes_what_the_settings_fix():
    """RunShape.at: the pair sample, the storage and the K-means sample (the cap, or every point when fewer) from the
    settings; the counts as given."""
    from isoflow.layers import LayerSettings

    counts = {k: v for k, v in SHAPE.__dict__.items() if k not in ("pair_points", "streamed", "sample")}
    shape = RunShape.at(LayerSettings(states="sample", sample_cap=300, pair_points=700), **counts)
    assert shape == RunShape(**{**SHAPE.__dict__, "pair_points": 700, "streamed": True, "sample": 300})
    every = RunShape.at(LayerSettings(states="all", sample_cap=5_000), **counts)
    assert (every.streamed, every.sample) == (False, SHAPE.points)
