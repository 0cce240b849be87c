"""Spectral and contrastive measures (isoflow.metrics.spectrum) against independent computations and hand cases."""

from __future__ import annotations

import math

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


def _stringer_alpha(ss: np.ndarray, trange: np.ndarray) -> float:
    """Stringer et al. (2019)'s power-law fit as the Richards lab's code runs it (utils/powerlaw.py,
    stringer_get_powerlaw): log ss at the 0-based indices ``trange``, against -log(index + 1), weights 1/(index + 1),
    the weighted normal equations solved; written from that code for the test."""
    y = np.log(np.abs(ss))[trange][:, None]
    ranks = trange + 1
    x = np.concatenate((-np.log(ranks)[:, None], np.ones((ranks.size, 1))), axis=1)
    w = 1.0 / ranks.astype(np.float64)[:, None]
    return float(np.linalg.solve(x.T @ (x * w), (w * x).T @ y).flatten()[0])


def test_alpha_req_as_li_et_al_fit_it(device):
    """α over ranks 12..100 weighted 1/k (LI_ALPHA_RANGE) equals the Richards lab's pipeline on the same points —
    scikit-learn's PCA explained-variance ratios, Stringer et al.'s fit over np.arange(11, 100) — and differs from the
    unweighted fit on a spectrum that is not a power law; the layers' table gets it, NaN below rank 100."""
    from sklearn.decomposition import PCA

    from isoflow.metrics.spectrum import LI_ALPHA_RANGE, covariance_spectrum_sizes

    rng = np.random.default_rng(5)
    scales = np.arange(1, 161) ** -0.6 * np.exp(rng.normal(scale=0.3, size=160))  # a noisy power law
    x = rng.normal(size=(2000, 160)) * scales
    ratios = PCA(svd_solver="full").fit(x).explained_variance_ratio_
    X = torch.tensor(x, device=device)
    weighted = alpha_req(X, first=LI_ALPHA_RANGE[0], last=LI_ALPHA_RANGE[1], weighted=True)
    assert LI_ALPHA_RANGE == (12, 100)
    assert weighted == pytest.approx(_stringer_alpha(ratios, np.arange(11, 100)), rel=1e-9)
    assert abs(weighted - alpha_req(X, first=12, last=100)) > 1e-3  # the weights matter off a power law
    sizes = covariance_spectrum_sizes(X)
    assert sizes["alpha_req_li"] == pytest.approx(weighted, rel=1e-12)
    assert math.isnan(covariance_spectrum_sizes(X[:, :99])["alpha_req_li"])  # rank 99: no rank 100 to fit


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


def test_covariance_spectrum_sizes_are_the_measures_each_computes():
    """One eigendecomposition of the covariance for all three: the same numbers as the functions one by one; α NaN
    where the covariance has no decay to fit, where alpha_req refuses."""
    from isoflow.metrics import covariance_spectrum_sizes, variance_effective_rank

    X = torch.as_tensor(np.random.default_rng(4).normal(size=(200, 120)) * np.linspace(0.1, 3.0, 120))
    assert covariance_spectrum_sizes(X) == {
        "variance_effective_rank": variance_effective_rank(X),
        "alpha_req": alpha_req(X),
        "alpha_req_li": alpha_req(X, first=12, last=100, weighted=True),
    }
    line = torch.tensor([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])  # one direction: numerical rank 1
    with pytest.raises(ValueError, match="numerical rank"):
        alpha_req(line)
    sizes = covariance_spectrum_sizes(line)
    assert sizes["variance_effective_rank"] == pytest.approx(1.0) and np.isnan(sizes["alpha_req"])
