"""k-NN distances, LID (MLE) and TwoNN against scikit-learn / scikit-dimension and hand-computed cases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import skdim
import torch
from conftest import make_cloud
from sklearn.neighbors import NearestNeighbors

from isoflow.metrics import knn_distances, lid_from_distances, lid_mle, twonn


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_knn_distances_match_sklearn(dtype):
    X, _ = make_cloud("clustered", 700, 30, 0)
    X = X.astype(dtype)
    ref, _ = NearestNeighbors(n_neighbors=6).fit(X.astype(np.float64)).kneighbors()
    ours = knn_distances(X, 6, block=128).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)


def test_knn_small_distances_exact_despite_large_norms():
    # Two points 1e-4 apart far from the origin: float32 expansion alone would lose them.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 8)).astype(np.float32) + 1000.0
    X[1] = X[0] + np.float32(1e-2) * np.eye(8, dtype=np.float32)[0]
    r = knn_distances(X, 1)
    assert float(r[0, 0]) == pytest.approx(float(np.linalg.norm(X[1].astype(np.float64) - X[0])), rel=1e-6)


@pytest.mark.parametrize("k", [5, 20])
def test_lid_matches_skdim_pointwise(k):
    X, _ = make_cloud("lowrank", 800, 24, 2)
    ref = skdim.id.MLE().fit(X, n_neighbors=k)
    ours = lid_mle(X, k, reduce=None).numpy()
    # scikit-dimension's Levina–Bickel form uses k-1 in the numerator: ours * (k-1)/k.
    np.testing.assert_allclose(ours * (k - 1) / k, ref.dimension_pw_, rtol=1e-9)
    assert lid_mle(X, k, reduce="harmonic") * (k - 1) / k == pytest.approx(ref.dimension_, rel=1e-9)


def test_lid_hand_computed():
    # Point 0 at the origin, neighbours at distances 1, 2, 4 along distinct axes and nothing else close:
    # LID = -1 / mean(log(1/4), log(2/4), log(4/4)) = 3 / (3 log 2 ) = 1/log 2.
    X = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0], [0, 0, 4], [100, 100, 100]], dtype=float)
    per_point = lid_mle(X, 3, reduce=None)
    assert float(per_point[0]) == pytest.approx(1 / np.log(2), rel=1e-12)


def test_lid_recovers_manifold_dimension():
    rng = np.random.default_rng(3)
    plane = rng.uniform(size=(4000, 3)) @ rng.normal(size=(3, 50))  # a 3-d slab in 50-d
    assert lid_mle(plane, 20) == pytest.approx(3.0, abs=0.4)


@pytest.mark.parametrize("method,discard", [("linear", 0.1), ("linear", 0.3), ("mle", 0.0), ("mle", 0.1)])
def test_twonn_matches_skdim(method, discard):
    X, _ = make_cloud("random", 1500, 10, 4)
    ref = skdim.id.TwoNN(discard_fraction=discard, method=method).fit(X).dimension_
    assert twonn(X, discard_fraction=discard, method=method) == pytest.approx(ref, rel=1e-9)


def test_twonn_recovers_dimension():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(5000, 4)) @ rng.normal(size=(4, 60))
    assert twonn(X) == pytest.approx(4.0, abs=0.4)


def test_repeated_points_are_merged_before_estimating():
    """A cloud with some points repeated (as a token's state at layer 0 repeats at every occurrence) gives the
    distinct points' estimates, which scikit-dimension gives on the distinct points; unmerged, a repeat's neighbour
    at distance 0 made its LID 0 (log 0) and pulled the mean down, silently."""
    X, _ = make_cloud("random", 300, 5, 6)
    repeated = np.vstack([X, X[:100], X[:100]])
    unique = np.unique(X, axis=0)
    with pytest.warns(UserWarning, match="TwoNN: 200 repeated point"):
        value = twonn(repeated)
    assert value == pytest.approx(skdim.id.TwoNN().fit(unique).dimension_, rel=1e-9)
    with pytest.warns(UserWarning, match="LID: 200 repeated point"):
        value = lid_mle(repeated, 10, reduce="harmonic")
    assert value * 9 / 10 == pytest.approx(skdim.id.MLE().fit(unique, n_neighbors=10).dimension_, rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert lid_mle(repeated, 10) == pytest.approx(lid_mle(X, 10), rel=1e-12)


def test_lid_from_given_distances_drops_a_point_with_a_repeat_as_neighbour():
    r = torch.tensor([[0.0, 1.0, 2.0], [1.0, 2.0, 4.0]], dtype=torch.float64)
    with pytest.warns(UserWarning, match="dropping 1 point"):
        per_point = lid_from_distances(r, reduce=None)
    assert per_point.tolist() == pytest.approx([3 / (np.log(4) + np.log(2))])


def test_bad_parameters():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="k must be between 1 and n_points - 1 = 9"):
        knn_distances(X, 10)
    with pytest.raises(ValueError, match="k >= 2"):
        lid_mle(X, 1)
    with pytest.raises(ValueError, match="reduce must be"):
        lid_mle(X, 3, reduce="max")
    with pytest.raises(ValueError, match="method must be"):
        twonn(X, method="fit")
    with pytest.raises(ValueError, match="discard_fraction"):
        twonn(X, discard_fraction=1.0)
    with pytest.raises(ValueError, match="needs discard_fraction > 0"):
        twonn(X, discard_fraction=0.0, method="linear")


def test_intrinsic_dim_follows_device(device):
    X, _ = make_cloud("lowrank", 500, 16, 7)
    t = torch.tensor(X, device=device)
    assert twonn(t) == pytest.approx(twonn(X), rel=1e-9)
    assert lid_mle(t, 10) == pytest.approx(lid_mle(X, 10), rel=1e-9)
