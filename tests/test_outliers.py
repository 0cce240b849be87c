"""Outlier dimensions (isoflow.metrics.outliers) against hand cases and brute force."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoflow.metrics import (
    cosine_anisotropy,
    cosine_shares,
    drop_dimensions,
    mean_abs_activation,
    outlier_dimensions,
    outlier_points,
    peak_ratio,
    points_variance_share,
)


def test_activation_profile_peak_and_outliers_by_hand():
    X = np.array([[1.0, -2.0, 0.5, 30.0], [-1.0, 2.0, 0.5, -10.0]])
    assert mean_abs_activation(X).tolist() == [1.0, 2.0, 0.5, 20.0]
    assert peak_ratio(X) == pytest.approx(20.0 / 1.5)  # median of 0.5, 1, 2, 20: 1.5, as NumPy's
    assert outlier_dimensions(X, factor=5) == [3] and outlier_dimensions(X, factor=1.3) == [3, 1]
    assert outlier_dimensions(X, factor=100) == []
    with pytest.raises(ValueError, match="factor"):
        outlier_dimensions(X, factor=0)


def test_cosine_shares_sum_to_the_mean_cosine_and_match_brute_force():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 6)) + [0, 0, 4, 0, 0, 0]
    X[7] = 0.0  # a zero vector has no direction: left out (cosine_anisotropy refuses it)
    U = X[np.linalg.norm(X, axis=1) > 0]
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    n = len(U)
    brute = [sum(U[i, k] * U[j, k] for i in range(n) for j in range(n) if i != j) / (n * (n - 1)) for k in range(6)]
    shares = cosine_shares(X)
    np.testing.assert_allclose(shares.numpy(), brute, atol=1e-12)
    assert float(shares.sum()) == pytest.approx(cosine_anisotropy(X[np.linalg.norm(X, axis=1) > 0]), abs=1e-12)
    assert int(torch.argmax(shares)) == 2  # the shifted dimension carries the mean cosine


def test_drop_dimensions_keeps_the_rest_in_order_on_the_device(device):
    X = torch.arange(12.0, device=device).reshape(3, 4)
    out = drop_dimensions(X, [0, 2])
    assert out.device == X.device and out.tolist() == [[1.0, 3.0], [5.0, 7.0], [9.0, 11.0]]


def test_outlier_points_and_their_variance_share_against_numpy(device):
    """Massive points as a causal LM's sinks make them: a cloud of 200 with three points 30-80 times as far out;
    NumPy's distances from the mean, the median and the shares as the reference."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 8))
    X[[17, 120, 3]] += np.array([80.0, 50.0, 30.0])[:, None] * rng.normal(size=(3, 8)) / np.sqrt(8)
    sq = ((X - X.mean(axis=0)) ** 2).sum(axis=1)
    expected = [int(i) for i in np.argsort(-sq) if sq[i] >= 10.0**2 * np.median(sq)]
    assert expected == [17, 120, 3]  # the case is what it says: the three, farthest first
    points = torch.tensor(X, device=device, dtype=torch.float32)
    assert outlier_points(points) == expected
    assert outlier_points(points, factor=1.0) == [int(i) for i in np.argsort(-sq) if sq[i] >= np.median(sq)]
    share = points_variance_share(points, expected)
    assert share == pytest.approx(sq[expected].sum() / sq.sum(), rel=1e-6) and share > 0.8
    mask = torch.zeros(200, dtype=torch.bool)
    mask[expected] = True
    assert points_variance_share(points, mask) == pytest.approx(share, rel=1e-12)
    assert points_variance_share(points, range(200)) == pytest.approx(1.0, rel=1e-12)
    # without them, no point is an outlier and the rest hold what they left
    rest = np.delete(X, expected, axis=0)
    assert outlier_points(rest) == []


def test_outlier_points_by_hand_and_bad_input():
    assert points_variance_share([[1.0, 2.0], [1.0, 2.0]], [0]) == 0.0  # no variance: nothing to hold
    assert outlier_points([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]) == []  # all at the mean: none is far out
    X = [[-1.0, 0.0], [1.0, 0.0], [-3.0, 0.0], [3.0, 0.0]]  # squared distances 1, 1, 9, 9: the median 5
    assert outlier_points(X, factor=1.3) == [2, 3] and outlier_points(X, factor=1.35) == []
    assert points_variance_share(X, [2]) == pytest.approx(0.45)
    with pytest.raises(ValueError, match="factor must be > 0"):
        outlier_points(X, factor=-1)
