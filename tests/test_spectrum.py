"""Spectral and contrastive measures (isoflow.metrics.spectrum) against independent computations and hand cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoflow.metrics import (
    alignment,
    alpha_req,
    effective_rank,
    isoscore,
    participation_ratio,
    stable_rank,
    uniformity,
)


def _orthonormal(n: int, r: int, seed: int, centred: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, r))
    if centred:
        a -= a.mean(axis=0)
    q, _ = np.linalg.qr(a)
    return q


def test_a_rank_r_matrix_with_equal_singular_values_has_effective_and_stable_rank_r(device):
    for r in (1, 3, 7):
        rows = _orthonormal(16, r, r).T  # r orthonormal rows in 16 dimensions
        X = torch.tensor(np.vstack([rows, np.zeros((5, 16))]) * 3.0, device=device)  # zero rows change no σ
        assert effective_rank(X) == pytest.approx(r, rel=1e-10)
        assert stable_rank(X) == pytest.approx(r, rel=1e-10)


@pytest.mark.parametrize("centred", [False, True])
def test_effective_and_stable_rank_match_numpys_singular_values(centred, device):
    rng = np.random.default_rng(0)
    for n, d in ((300, 20), (12, 40)):  # points outnumber dimensions, and the reverse (the Gram matrix)
        x = rng.normal(size=(n, d)) * rng.uniform(0.1, 5, size=d) + 3.0
        ref = x - x.mean(axis=0) if centred else x
        s = np.linalg.svd(ref, compute_uv=False)
        p = s / s.sum()
        p = p[p > 0]
        X = torch.tensor(x, device=device)
        assert effective_rank(X, centred=centred) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-9)
        assert stable_rank(X, centred=centred) == pytest.approx((s**2).sum() / s[0] ** 2, rel=1e-9)
        X32 = torch.tensor(x, dtype=torch.float32, device=device)
        assert effective_rank(X32, centred=centred) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-5)


def test_the_variance_effective_rank_is_li_et_al_s_rankme(device):
    """Against NumPy (the entropy of np.cov's eigenvalues over their sum) and against the Richards lab's form (the
    entropy of scikit-learn's PCA explained-variance ratios, plus 1e-7 each): the same number but for their 1e-7; r
    for r equal directions, as effective_rank; below effective_rank (σ's entropy) on any other spectrum."""
    from sklearn.decomposition import PCA

    from isoflow.metrics import variance_effective_rank

    rng = np.random.default_rng(3)
    for n, d in ((400, 16), (10, 30)):
        x = rng.normal(size=(n, d)) * rng.uniform(0.1, 5, size=d) + 2.0
        lam = np.clip(np.linalg.eigvalsh(np.cov(x, rowvar=False)), 0, None)
        lam = lam[lam > 1e-12 * lam.max()]
        p = lam / lam.sum()
        X = torch.tensor(x, device=device)
        assert variance_effective_rank(X) == pytest.approx(np.exp(-(p * np.log(p)).sum()), rel=1e-10)
        ratios = PCA(svd_solver="full").fit(x).explained_variance_ratio_ + 1e-7
        assert variance_effective_rank(X) == pytest.approx(np.exp(-(ratios * np.log(ratios)).sum()), rel=1e-4)
        assert variance_effective_rank(X) < effective_rank(X, centred=True)
    for r in (1, 3, 7):
        rows = _orthonormal(16, r, r).T * 2.0
        X = torch.tensor(np.vstack([rows, -rows]), device=device)  # centred: r equal directions
        assert variance_effective_rank(X) == pytest.approx(r, rel=1e-10)


def test_isoscore_is_the_participation_ratios_affine_map(device):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 12)) * np.linspace(0.2, 3, 12)
    pr = participation_ratio(torch.tensor(x, device=device))
    lam = np.linalg.eigvalsh(np.cov(x, rowvar=False))
    assert pr == pytest.approx(lam.sum() ** 2 / (lam**2).sum(), rel=1e-10)
    assert isoscore(torch.tensor(x, device=device)) == pytest.approx((pr - 1) / (12 - 1), rel=1e-10)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.3])
def test_alpha_req_recovers_a_power_law_spectrum(alpha, device):
    q = _orthonormal(200, 30, 2, centred=True)
    q, _ = np.linalg.qr(q)  # orthonormal, centred columns: the covariance's eigenvalues are the squared scales
    k = np.arange(1, 31)
    X = torch.tensor(q * k ** (-alpha / 2), device=device)
    assert alpha_req(X) == pytest.approx(alpha, abs=1e-8)
    assert alpha_req(X, first=5, last=20) == pytest.approx(alpha, abs=1e-8)  # a power law in any range
    with pytest.raises(ValueError, match="within 1..30"):
        alpha_req(X, first=10, last=31)


def test_uniformity_and_alignment_as_wang_and_isola_define_them(device):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2500, 8, generator=g, dtype=torch.float64)  # over two blocks of pairs
    y = x + 0.3 * torch.randn(2500, 8, generator=g, dtype=torch.float64)
    u = torch.nn.functional.normalize(x, dim=1)
    v = torch.nn.functional.normalize(y, dim=1)
    expected = torch.pdist(u, p=2).pow(2).mul(-2).exp().mean().log()  # their code's definition
    assert uniformity(x.to(device)) == pytest.approx(float(expected), abs=1e-10)
    assert alignment(x.to(device), y.to(device)) == pytest.approx(float((u - v).norm(dim=1).pow(2).mean()), rel=1e-12)
    same = torch.ones(5, 3, dtype=torch.float64, device=device)
    assert uniformity(same) == pytest.approx(0.0, abs=1e-12)  # one direction: every potential 1
    with pytest.raises(ValueError, match="t must be > 0"):
        uniformity(x, t=0)
    with pytest.raises(ValueError, match="pairs row by row"):
        alignment(x, y[:10])


def test_geometry_reports_the_spectral_measures_as_their_functions_give_them():
    from isoflow.metrics import geometry

    x = torch.randn(300, 6, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * torch.arange(1, 7)
    out = geometry(x)
    for name, fn in {
        "participation_ratio": participation_ratio,
        "effective_rank": effective_rank,
        "stable_rank": stable_rank,
        "uniformity": uniformity,
    }.items():
        assert out[name] == pytest.approx(fn(x), rel=1e-12), name
    assert "alpha_req" not in out  # its fitted range is the caller's choice


def test_spectrum_sizes_are_the_three_measures_each_computes():
    """One eigendecomposition for both ranks: the same numbers as the functions one by one."""
    from isoflow.metrics import spectrum_sizes

    X = torch.as_tensor(np.random.default_rng(3).normal(size=(200, 12)) * np.linspace(0.1, 3.0, 12))
    assert spectrum_sizes(X) == {
        "effective_rank": effective_rank(X),
        "participation_ratio": participation_ratio(X),
        "stable_rank": stable_rank(X),
    }


def test_covariance_spectrum_sizes_are_the_two_measures_each_computes():
    """One eigendecomposition of the covariance for both: the same numbers as the functions one by one; α NaN where
    the covariance has no decay to fit, where alpha_req refuses."""
    from isoflow.metrics import covariance_spectrum_sizes, variance_effective_rank

    X = torch.as_tensor(np.random.default_rng(4).normal(size=(200, 12)) * np.linspace(0.1, 3.0, 12))
    assert covariance_spectrum_sizes(X) == {
        "variance_effective_rank": variance_effective_rank(X),
        "alpha_req": alpha_req(X),
    }
    line = torch.tensor([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])  # one direction: numerical rank 1
    with pytest.raises(ValueError, match="numerical rank"):
        alpha_req(line)
    sizes = covariance_spectrum_sizes(line)
    assert sizes["variance_effective_rank"] == pytest.approx(1.0) and np.isnan(sizes["alpha_req"])
