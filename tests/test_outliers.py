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
    peak_ratio,
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
