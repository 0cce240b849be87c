"""Measures from running sums (isoflow.metrics.moments): folded in batch by batch, each equals the in-memory
function on all the points, and the covariance NumPy's, also far from the origin where a naive XᵀX − nμμᵀ cancels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isoflow.metrics import (
    alpha_req,
    cosine_anisotropy,
    cosine_shares,
    drop_dimensions,
    effective_rank,
    isoscore,
    participation_ratio,
    stable_rank,
    variance_effective_rank,
)
from isoflow.metrics.moments import Moments


def _folded(x: np.ndarray, sizes) -> Moments:
    m, at = Moments(x.shape[1]), 0
    for size in sizes:
        m.update(torch.from_numpy(x[at : at + size]))
        at += size
    assert at == len(x)
    return m


@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_the_streamed_measures_equal_the_in_memory_ones(offset):
    """Uneven batches (one of a single point) of a cloud with a power-law spectrum and 120 dimensions (so that Li et
    al.'s α over ranks 12-100 has a range), near the origin and 10⁴ from it."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(700, 120)) * np.arange(1, 121) ** -0.7 + offset * rng.uniform(0.5, 1.5, size=120)
    m = _folded(x, [1, 299, 250, 150])
    np.testing.assert_allclose(m.covariance().numpy(), np.cov(x, rowvar=False), rtol=1e-9, atol=1e-12)
    X = torch.from_numpy(x)
    got = m.sizes()
    expected = {
        "isoscore": isoscore(X),
        "participation_ratio": participation_ratio(X),
        "effective_rank": effective_rank(X),
        "stable_rank": stable_rank(X),
        "variance_effective_rank": variance_effective_rank(X),
        "alpha_req": alpha_req(X),
        "alpha_req_li": alpha_req(X, first=12, last=100, weighted=True),
        "cosine_anisotropy": cosine_anisotropy(X),
    }
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-8), name
    np.testing.assert_allclose(m.mean_abs().numpy(), np.abs(x).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(m.cosine_shares().numpy(), cosine_shares(X).numpy(), rtol=1e-8, atol=1e-15)
    dropped = [3, 0, 77]  # as a layer's largest mean-|activation| dimensions come, any order
    rest, points = m.without(dropped).sizes(), drop_dimensions(X, dropped)
    expected_rest = {
        "isoscore": isoscore(points),
        "participation_ratio": participation_ratio(points),
        "effective_rank": effective_rank(points),
        "stable_rank": stable_rank(points),
        "alpha_req": alpha_req(points),
        "alpha_req_li": alpha_req(points, first=12, last=100, weighted=True),
    }
    for name, value in expected_rest.items():
        assert rest[name] == pytest.approx(value, rel=1e-8), name
    assert math.isnan(rest["cosine_anisotropy"])  # the rows' directions changed with their lengths


def test_the_order_and_size_of_batches_do_not_matter_and_too_little_is_refused():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(90, 6)) + 3.0
    one = _folded(x, [90]).sizes()
    many = _folded(x, [7] * 12 + [6]).sizes()
    assert all(many[k] == pytest.approx(v, rel=1e-11, abs=1e-14) for k, v in one.items() if not math.isnan(v))
    assert math.isnan(one["alpha_req_li"])  # 6 dimensions: no rank 100 to fit
    with pytest.raises(ValueError, match="1 point\\(s\\) folded in; these measures need at least 2"):
        Moments(6).update(torch.from_numpy(x[:1])).sizes()
    with pytest.raises(ValueError, match="a batch of 5 dimensions; these moments are of 6"):
        Moments(6).update(torch.from_numpy(x[:, :5]))
