"""Silhouette (Euclidean, squared Euclidean) against scikit-learn, plus conventions and properties."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from conftest import CLOUD_KINDS, make_cloud
from sklearn.metrics import silhouette_score

from isoflow.metrics import encode_labels, silhouette, silhouette_sqeuclidean, silhouette_tensor

sil = importlib.import_module("isoflow.metrics.silhouette")  # the module, not the function of that name


@pytest.mark.parametrize("kind", CLOUD_KINDS)
@pytest.mark.parametrize("n,d,seed", [(300, 8, 0), (1500, 40, 1), (2500, 3, 2)])
def test_silhouette_matches_sklearn_float64(kind, n, d, seed):
    X, y = make_cloud(kind, n, d, seed)
    assert silhouette(X, y) == pytest.approx(silhouette_score(X, y), abs=1e-6)


@pytest.mark.parametrize("kind", ["random", "clustered", "lowrank"])
@pytest.mark.parametrize("seed", [0, 1])
def test_silhouette_matches_sklearn_float32(kind, seed):
    # float32 GEMM for the distances, float64 sums; sklearn upcasts float32 to float64 internally.
    X, y = make_cloud(kind, 3000, 64, seed)
    X32 = X.astype(np.float32)
    assert silhouette(torch.from_numpy(X32), y) == pytest.approx(silhouette_score(X32, y), abs=1e-5)


@pytest.mark.parametrize("block", [1, 7, 64, 10_000])
def test_block_size_does_not_change_result(block):
    X, y = make_cloud("clustered", 333, 5, 3)
    assert silhouette(X, y, block=block) == pytest.approx(silhouette_score(X, y), abs=1e-10)


@pytest.mark.parametrize("gemm", ["torch", "numpy"])  # each BLAS its own path, below and above SCATTER_ABOVE_K
# 4, 5: either side of GEMV_UP_TO_K (NumPy: products with vectors, a thin GEMM); 129, 300: above SCATTER_ABOVE_K
@pytest.mark.parametrize("k", [2, 4, 5, 17, 129, 300])
def test_many_clusters(monkeypatch, gemm, k):
    monkeypatch.setenv("ISOFLOW_CPU_GEMM", gemm)
    rng = np.random.default_rng(k)
    X = rng.normal(size=(900, 12))
    y = rng.integers(0, k, 900)
    assert silhouette(X, y) == pytest.approx(silhouette_score(X, y), abs=1e-6)
    assert silhouette(X, y, block=100) == pytest.approx(silhouette_score(X, y), abs=1e-6)
    assert silhouette_sqeuclidean(X, y) == pytest.approx(silhouette_score(X, y, metric="sqeuclidean"), abs=1e-6)


def test_gemm_and_scatter_paths_agree(monkeypatch):
    X, _ = make_cloud("clustered", 700, 9, 4)
    y = np.random.default_rng(4).integers(0, 40, 700)
    for dtype in (np.float64, np.float32):
        monkeypatch.setattr(sil, "SCATTER_ABOVE_K", 10_000)
        gemm = silhouette(X.astype(dtype), y, block=128)
        monkeypatch.setattr(sil, "SCATTER_ABOVE_K", 1)
        scatter = silhouette(X.astype(dtype), y, block=128)
        assert scatter == pytest.approx(gemm, abs=1e-12 if dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-5)])
def test_numpy_many_cluster_strips(monkeypatch, dtype, tol):
    """NumPy's path for many clusters (strips of every row summed by a sparse product): labels in no order, one cluster
    of 40 points, singletons, strips of one column (block 7: 49 distances), of 8 (the last one of 6) and of the whole
    width; scikit-learn's value."""
    monkeypatch.setenv("ISOFLOW_CPU_GEMM", "numpy")
    monkeypatch.setattr(sil, "SCATTER_ABOVE_K", 1)  # every clustering takes the many-cluster path
    rng = np.random.default_rng(8)
    y = np.concatenate([np.zeros(40, int), rng.integers(1, 9, 60), [9, 10]])  # 0: 40 points; 9, 10: singletons
    rng.shuffle(y)
    X = rng.normal(size=(len(y), 6)) + 3.0 * rng.normal(size=(11, 6))[y]
    assert [sil.strip_width(len(y), block) for block in (7, 30, 1024)] == [1, 8, 102]
    for block in (7, 30, None):
        assert silhouette(X.astype(dtype), y, block=block) == pytest.approx(silhouette_score(X, y), abs=tol)


@pytest.mark.slow
@pytest.mark.parametrize("gemm", ["torch", "numpy"])
def test_many_cluster_strips_sum_a_large_cluster_precisely(monkeypatch, gemm):
    """The strips add a cluster's distances in float32 down every row (not in 1,024-row blocks): with half of 12,000
    float32 points in one cluster beside 299 small ones, still scikit-learn's float64 value within 1e-7."""
    monkeypatch.setenv("ISOFLOW_CPU_GEMM", gemm)
    rng = np.random.default_rng(0)
    y = np.where(rng.random(12_000) < 0.5, 0, rng.integers(1, 300, 12_000))
    X = (rng.normal(size=(12_000, 50)) + 2.0 * rng.normal(size=(300, 50))[y]).astype(np.float32)
    assert silhouette(X, y) == pytest.approx(silhouette_score(X.astype(np.float64), y), abs=1e-7)


@pytest.mark.parametrize("kind", CLOUD_KINDS)
def test_sqeuclidean_matches_sklearn(kind):
    X, y = make_cloud(kind, 1200, 20, 5)
    assert silhouette_sqeuclidean(X, y) == pytest.approx(silhouette_score(X, y, metric="sqeuclidean"), abs=1e-6)
    X32 = X.astype(np.float32)
    assert silhouette_sqeuclidean(X32, y) == pytest.approx(
        silhouette_score(X32.astype(np.float64), y, metric="sqeuclidean"), abs=1e-5
    )


@pytest.mark.parametrize("gemm", ["torch", "numpy"])
def test_singleton_clusters_score_zero(monkeypatch, gemm):
    # sklearn convention: a point alone in its cluster has s = 0 (and still counts in the mean).
    monkeypatch.setenv("ISOFLOW_CPU_GEMM", gemm)
    X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0], [10.0, 0.0]])
    y = np.array([0, 0, 1, 1, 2])
    expected = silhouette_score(X, y)
    assert silhouette(X, y) == pytest.approx(expected, abs=1e-12)
    assert silhouette_sqeuclidean(X, y) == pytest.approx(silhouette_score(X, y, metric="sqeuclidean"), abs=1e-12)


def test_hand_computed_case():
    # Points 0, 1 on a line (cluster A) and 4 (cluster B, with 5).
    # x=0: a=1, b=(4+5)/2=4.5 → 3.5/4.5; x=1: a=1, b=3.5 → 2.5/3.5;
    # x=4: a=1, b=(4+3)/2=3.5 → 2.5/3.5; x=5: a=1, b=4.5 → 3.5/4.5.
    X = np.array([[0.0], [1.0], [4.0], [5.0]])
    expected = (2 * 3.5 / 4.5 + 2 * 2.5 / 3.5) / 4
    assert silhouette(X, [0, 0, 1, 1]) == pytest.approx(expected, abs=1e-15)


def test_well_separated_clusters_near_one():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 250)
    X = rng.normal(scale=0.01, size=(1000, 10)) + 100.0 * np.eye(10)[y]
    assert silhouette(X, y) > 0.999


def test_multilabel_rows_are_clusters():
    rng = np.random.default_rng(1)
    Y = rng.integers(0, 2, size=(600, 4))  # up to 16 distinct label sets
    X = rng.normal(size=(600, 6)) + Y @ rng.normal(scale=3, size=(4, 6))
    codes = np.unique(Y, axis=0, return_inverse=True)[1].reshape(-1)
    assert silhouette(X, Y) == pytest.approx(silhouette_score(X, codes), abs=1e-6)
    assert silhouette(X, torch.from_numpy(Y)) == pytest.approx(silhouette_score(X, codes), abs=1e-6)


def test_string_labels_and_prebuilt_clusters():
    X, y = make_cloud("clustered", 200, 4, 0)
    names = np.array(["neg", "neu", "pos"])[y]
    expected = silhouette_score(X, y)
    assert silhouette(X, names) == pytest.approx(expected, abs=1e-6)
    clusters = encode_labels(y)
    assert float(silhouette_tensor(torch.from_numpy(X), clusters)) == pytest.approx(expected, abs=1e-6)


def test_identical_points_score_zero():
    # All distances zero: a = b = 0 → 0 by the 0/0 convention (sklearn gives the same).
    X = np.ones((6, 3))
    y = [0, 0, 0, 1, 1, 1]
    assert silhouette(X, y) == 0.0 == silhouette_score(X, y)


@pytest.mark.parametrize(
    "labels,match",
    [
        ([0, 0, 0, 0, 0], "Number of labels is 1"),
        ([0, 1, 2, 3, 4], "Number of labels is 5"),
        ([0, 1, 0], "labels have 3 entries but X has 5 rows"),
        (np.zeros((5, 2, 2)), "1-d \\(classes\\) or 2-d"),
    ],
)
def test_bad_labels(labels, match):
    X = np.random.default_rng(0).normal(size=(5, 3))
    with pytest.raises(ValueError, match=match):
        silhouette(X, labels)
    with pytest.raises(ValueError, match=match):
        silhouette_sqeuclidean(X, labels)


def test_bad_points():
    with pytest.raises(ValueError, match="NaN/inf"):
        silhouette(np.array([[0.0], [np.nan], [1.0]]), [0, 1, 1])
    with pytest.raises(ValueError, match="block must be"):
        silhouette(np.eye(3), [0, 1, 1], block=0)


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_many_clusters_on_device(device, dtype, tol):
    """The many-cluster path (strips summed by one index_add_ each) on the device, with strips narrower than the data
    and the device's own block policy; scikit-learn's value."""
    rng = np.random.default_rng(11)
    y = rng.integers(0, 300, 900)
    X = rng.normal(size=(900, 12)) + 2.0 * rng.normal(size=(300, 12))[y]
    t, labels = torch.tensor(X, dtype=dtype, device=device), torch.tensor(y, device=device)
    for block in (100, None):
        assert silhouette(t, labels, block=block) == pytest.approx(silhouette_score(X, y), abs=tol)


def test_silhouette_follows_device(device):
    X, y = make_cloud("clustered", 900, 16, 4)
    t = torch.tensor(X, dtype=torch.float32, device=device)
    assert silhouette(t, torch.tensor(y, device=device)) == pytest.approx(silhouette_score(X, y), abs=1e-5)


@pytest.mark.slow
def test_paper_size_float32_parity():
    # The paper's size: n = 10,662 points, d = 384, 2 labels.
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 10_662)
    X = (rng.normal(size=(10_662, 384)) + 0.3 * y[:, None]).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # SBERT-like unit vectors
    assert silhouette(X, y) == pytest.approx(silhouette_score(X, y), abs=1e-5)


@pytest.mark.parametrize("gemm", ["torch", "numpy"])
@pytest.mark.parametrize("scatter_above_k", [10_000, 1])  # blocks with one-hot sums; strips (block 64: several)
def test_subset_with_absent_cluster_matches_sklearn(monkeypatch, gemm, scatter_above_k):
    # The loop's samples keep all k cluster ids; a cluster missing from the sample must simply not count.
    monkeypatch.setenv("ISOFLOW_CPU_GEMM", gemm)
    monkeypatch.setattr(sil, "SCATTER_ABOVE_K", scatter_above_k)
    X, y = make_cloud("clustered", 600, 8, 9)
    clusters = encode_labels(y)
    keep = torch.from_numpy(np.flatnonzero(y != 2))  # cluster 2 absent
    sub = clusters.subset(keep)
    assert sub.k == 3 and int(sub.sizes[2]) == 0
    got = float(silhouette_tensor(torch.from_numpy(X)[keep], sub, block=64))
    assert got == pytest.approx(silhouette_score(X[y != 2], y[y != 2]), abs=1e-6)


@pytest.mark.parametrize("gemm", ["torch", "numpy"])
def test_several_labellings_in_one_pass_match_sklearn(monkeypatch, gemm):
    """silhouettes(): each labelling's value is scikit-learn's, whatever the others (K-means' K = 2..15 at once)."""
    from isoflow.metrics import silhouettes

    monkeypatch.setenv("ISOFLOW_CPU_GEMM", gemm)
    X, y = make_cloud("clustered", 700, 10, 5)
    rng = np.random.default_rng(0)
    labellings = [y, *(rng.integers(0, k, 700) for k in range(2, 16)), np.where(y == 0, "a", "b")]
    got = silhouettes(X, labellings, block=128)
    assert got == pytest.approx([silhouette_score(X, lab) for lab in labellings], abs=1e-6)
    assert silhouettes(torch.from_numpy(X.astype(np.float32)), [y])[0] == pytest.approx(silhouette(X, y), abs=1e-5)
    assert silhouettes(X, []) == []
    with pytest.raises(ValueError, match="clusters"):
        silhouettes(X, [y, np.zeros(700)])
