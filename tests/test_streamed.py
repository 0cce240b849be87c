"""A layer's measures from sums streamed batch by batch (isoflow.layers.streamed) equal the layer analysis' own
(isoflow.layers.measure.layer_metrics) on all the points, column for column."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from isoflow.layers import LayerSettings, layer_metrics
from isoflow.layers import streamed as streamed_module
from isoflow.layers.streamed import LayerStatistics, TypeIndex

SETTINGS = LayerSettings(sample_cap=200, k_max=3, kmeans_samples=1, kmeans_starts=1, k_lid=5, pair_points=50)


def _layer(seed: int, n: int = 900, dim: int = 24):
    """Points with two outlier dimensions and an offset (as a transformer's states), Zipf-like types (some 300 of them,
    so that the S_inter curve has rungs below its last) and each point's position in a sentence of 2-12 tokens."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)) * np.linspace(2.0, 0.2, dim) + rng.uniform(-1, 1, size=dim)
    x[:, [3, 17]] *= 12.0
    weights = 1.0 / np.arange(1, 301) ** 0.8
    types = np.array([f"w{k}" for k in rng.choice(300, size=n, p=weights / weights.sum())], dtype=object)
    lengths = rng.integers(2, 13, size=n)
    positions = np.concatenate([np.arange(k) for k in lengths])[:n]
    return x.astype(np.float32), types, positions


@pytest.mark.parametrize(
    "seed, batches, dtype, rel, block",
    [
        (0, [1, 399, 500], np.float64, 1e-9, 1024),
        (1, [300] * 3, np.float64, 1e-9, 1024),
        (2, [450, 450], np.float32, 1e-6, 1024),
        (3, [100] * 9, np.float64, 1e-9, 64),  # the types' sums in blocks of 64 types, growing batch by batch
    ],
)
def test_the_streamed_columns_equal_the_in_memory_row(seed, batches, dtype, rel, block, monkeypatch):
    """To float64 rounding on float64 points; to float32's on float32 points, whose in-memory products are float32
    (added up in float64: docs/performance.md) where the sums are float64 throughout."""
    monkeypatch.setattr(streamed_module, "TYPE_BLOCK", block)
    x, types, positions = _layer(seed)
    x = x.astype(dtype)
    index, stats, at = TypeIndex(), LayerStatistics(x.shape[1]), 0
    for size in batches:
        rows = slice(at, at + size)
        stats.update(torch.from_numpy(x[rows]), index.codes(types[rows]), torch.from_numpy(positions[rows] > 0))
        at += size
    streamed = stats.columns(index, outlier_factor=SETTINGS.outlier_factor, outlier_remove=SETTINGS.outlier_remove)
    profile, curve = streamed.pop("profile"), streamed.pop("curve")
    row, extra = layer_metrics(torch.from_numpy(x), types, SETTINGS, positions)
    assert len(streamed) == 29 and row["outlier_count"] >= 2  # the outlier dimensions are there to find
    for name, value in streamed.items():
        if isinstance(value, str):
            assert value == row[name], name
        else:
            assert value == pytest.approx(row[name], rel=rel, abs=1e-12, nan_ok=True), name
    for name, values in profile.items():
        np.testing.assert_allclose(values, extra["dims"][name], rtol=rel, atol=1e-15)
    assert [c["n_types"] for c in curve] == [c["n_types"] for c in extra["types"]] and len(curve) >= 2
    for mine, theirs in zip(curve, extra["types"]):
        assert mine["s_inter"] == pytest.approx(theirs["s_inter"], rel=rel), mine["n_types"]
    assert len(stats.types.blocks) == -(-len(index.counts) // block)  # blocks enough for the types seen, none spare


def test_types_sums_kept_on_disk_are_those_held_in_memory_to_the_bit(tmp_path):
    """A layer keeping its types' sums in a file (a run with a store folder) gives the sums and the columns of one
    holding them in memory, bit for bit; the file holds one float64 row a type seen, and the process none of them."""
    x, types, positions = _layer(5)
    index, memory, on_disk = TypeIndex(), LayerStatistics(x.shape[1]), LayerStatistics(x.shape[1], tmp_path / "t.f64")
    for rows in (slice(0, 250), slice(250, 700), slice(700, 900)):
        codes, later = index.codes(types[rows]), torch.from_numpy(positions[rows] > 0)
        for stats in (memory, on_disk):
            stats.update(torch.from_numpy(x[rows]), codes, later)
    n = len(index.counts)
    assert torch.equal(on_disk.type_sums, memory.type_sums[:n])
    assert (tmp_path / "t.f64").stat().st_size == n * x.shape[1] * 8 and on_disk.types.blocks == []
    kw = dict(outlier_factor=SETTINGS.outlier_factor, outlier_remove=SETTINGS.outlier_remove)
    mine, theirs = on_disk.columns(index, **kw), memory.columns(index, **kw)
    assert mine.pop("curve") == theirs.pop("curve") and mine.pop("profile").keys() == theirs.pop("profile").keys()
    assert mine.keys() == theirs.keys() and all(
        mine[k] == theirs[k] or mine[k] != mine[k] and theirs[k] != theirs[k] for k in mine
    )
    again = LayerStatistics(x.shape[1], tmp_path / "t.f64")  # an encoding started again starts from zero
    assert again.types.rows == 0 and (tmp_path / "t.f64").stat().st_size == 0


def test_sums_saved_as_one_tensor_of_types_are_read_back(tmp_path):
    """A progress folder's sums saved when a layer kept its types' sums in one tensor (``type_sums``) resume: the
    tensor is the first block, and the sums go on growing from it."""
    x, types, positions = _layer(4, n=300)
    index, stats = TypeIndex(), LayerStatistics(x.shape[1])
    stats.update(torch.from_numpy(x[:200]), index.codes(types[:200]), torch.from_numpy(positions[:200] > 0))
    old = copy.deepcopy(stats.__dict__)
    old["type_sums"] = old.pop("types").blocks[0][: len(index.counts)]
    saved = LayerStatistics.__new__(LayerStatistics)
    saved.__setstate__(old)
    for s in (stats, saved):
        s.update(torch.from_numpy(x[200:]), index.codes(types[200:]), torch.from_numpy(positions[200:] > 0))
    n = len(index.counts)
    assert torch.equal(saved.type_sums[:n], stats.type_sums[:n])
