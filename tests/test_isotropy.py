"""IsoScore, IsoScore*, cosine anisotropy and Cai et al.'s S_inter/S_intra against independent references."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import CLOUD_KINDS, make_cloud
from IsoScore.IsoScore import IsoScore as ref_isoscore
from IsoScore.IsoScore import IsoScore_star as ref_isoscore_star

from isoflow.metrics import (
    cosine_anisotropy,
    covariance,
    isoscore,
    isoscore_star,
    s_inter,
    s_inter_by_type_count,
    s_intra,
)


def isoscore_by_steps(X: np.ndarray) -> float:
    """The paper's four steps on the covariance eigenvalues (independent of our closed form)."""
    d = X.shape[1]
    lam = np.clip(np.linalg.eigvalsh(np.cov(X.T)), 0, None)
    sig = np.sqrt(d) * lam / np.linalg.norm(lam)
    delta = np.linalg.norm(sig - 1) / np.sqrt(2 * (d - np.sqrt(d)))
    phi = (d - delta**2 * (d - np.sqrt(d))) ** 2 / d**2
    return (d * phi - 1) / (d - 1)


@pytest.mark.parametrize("kind", CLOUD_KINDS)
@pytest.mark.parametrize("n,d,seed", [(500, 16, 0), (2000, 64, 1), (300, 300, 2), (50, 128, 3)])
def test_isoscore_matches_package_float64(kind, n, d, seed):
    X, _ = make_cloud(kind, n, d, seed)
    ours = isoscore(X)
    # The package builds float32 constants even for float64 input (~2e-8 error): 1e-6 is the stated tolerance.
    assert ours == pytest.approx(float(ref_isoscore(X)), abs=1e-6)
    assert ours == pytest.approx(isoscore_by_steps(X), abs=1e-9)


@pytest.mark.parametrize("kind", ["random", "clustered", "lowrank"])
def test_isoscore_float32_matches_float64_reference(kind):
    X, _ = make_cloud(kind, 4000, 96, 7)
    X32 = X.astype(np.float32)
    assert isoscore(X32) == pytest.approx(isoscore_by_steps(X32.astype(np.float64)), abs=1e-6)
    assert isoscore(torch.from_numpy(X32)) == pytest.approx(float(ref_isoscore(X32)), abs=1e-5)


@pytest.mark.parametrize("group_chunks", [1, 2, 1000])
def test_float32_scatter_matrix_in_batched_chunks(monkeypatch, group_chunks):
    """torch's float32 XᵀX: 1,024-row chunks (the last one zero-padded) multiplied as batched products, a group of
    chunks at a time, summed in float64: within float32's rounding of the float64 product, and IsoScore within 1e-7."""
    import importlib

    iso = importlib.import_module("isoflow.metrics.isotropy")
    monkeypatch.setenv("ISOFLOW_CPU_GEMM", "torch")
    monkeypatch.setattr(iso, "BATCHED_SCATTER_VALUES", 24 * 24 * group_chunks)
    x = torch.from_numpy(np.random.default_rng(3).normal(size=(4500, 24)) + 5.0)
    xc = (x - x.mean(dim=0)).float()  # 5 chunks, the last of 404 rows
    G, exact = iso._scatter_matrix(xc), xc.double().T @ xc.double()
    assert G.dtype == torch.float64 and torch.allclose(G, exact, rtol=1e-6, atol=1e-6 * float(exact.abs().max()))
    assert float(iso.isoscore_tensor(xc)) == pytest.approx(isoscore_by_steps(xc.double().numpy()), abs=1e-7)


def test_isoscore_isotropic_gaussian_near_one():
    X = np.random.default_rng(0).normal(size=(200_000, 20))
    assert isoscore(X) > 0.999


@pytest.mark.parametrize("k,d", [(1, 10), (3, 10), (5, 50), (10, 10)])
def test_isoscore_k_of_d_dimensions(k, d):
    # Orthonormal, zero-mean columns in k of d coordinates: covariance exactly c·diag(1,..,1,0,..,0).
    n = 4096
    Z = np.random.default_rng(k).normal(size=(n, k))
    Q, _ = np.linalg.qr(Z - Z.mean(0))
    X = np.zeros((n, d))
    X[:, :k] = Q
    assert isoscore(X) == pytest.approx((k - 1) / (d - 1), abs=1e-9)


def test_isoscore_small_n_large_d_uses_rank():
    # n <= d: rank n-1; the score is still defined (eigenvalues include zeros).
    X, _ = make_cloud("random", 10, 100, 0)
    val = isoscore(X)
    assert val == pytest.approx(float(ref_isoscore(X)), abs=1e-6)
    assert val <= (10 - 2) / (100 - 1) + 1e-12


def test_isoscore_rotation_and_scale_invariant():
    X, _ = make_cloud("lowrank", 800, 20, 4)
    Q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(20, 20)))
    assert isoscore(3.7 * X @ Q + 11.0) == pytest.approx(isoscore(X), abs=1e-10)


@pytest.mark.parametrize(
    "bad,match",
    [
        (np.array([[1.0, np.nan], [0.0, 1.0], [2.0, 2.0]]), "NaN/inf"),
        (np.array([[1.0, np.inf], [0.0, 1.0], [2.0, 2.0]]), "the first is row 1 \\(rows counted from 1\\)"),
        (np.zeros(5), "shape \\(n_points, dim\\)"),
        (np.zeros((2, 3, 4)), "3-d"),
        (np.ones((1, 4)), "at least 2 points"),
        (np.ones((6, 4)), "all points are identical"),
        (np.ones((6, 1)) * np.arange(6)[:, None], "dim >= 2"),
        (np.ones((3, 2)) + 1j, "real-valued"),
    ],
)
def test_isoscore_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        isoscore(bad)


def test_integer_input_is_promoted():
    X = np.array([[0, 1, 2], [3, 1, 0], [2, 2, 2], [5, 0, 1]], dtype=np.int64)
    assert isoscore(X) == pytest.approx(isoscore_by_steps(X.astype(float)), abs=1e-12)


def test_isoscore_follows_device(device):
    X, _ = make_cloud("clustered", 1000, 32, 5)
    assert isoscore(torch.tensor(X, device=device)) == pytest.approx(isoscore(X), abs=1e-12)


# IsoScore* -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CLOUD_KINDS)
def test_isoscore_star_zeta0_equals_isoscore(kind):
    X, _ = make_cloud(kind, 400, 24, 3)
    assert float(isoscore_star(X)) == pytest.approx(isoscore(X), abs=1e-12)


@pytest.mark.parametrize("zeta", [0.1, 0.2, 0.5, 1.0])
def test_isoscore_star_matches_package(zeta):
    X, _ = make_cloud("lowrank", 300, 16, 2)
    big, _ = make_cloud("random", 5000, 16, 9)
    C0 = covariance(big)
    ref = float(ref_isoscore_star(X, C0.numpy(), zeta))
    assert float(isoscore_star(X, C0, zeta)) == pytest.approx(ref, abs=1e-6)


def test_isoscore_star_identity_target_and_full_shrinkage():
    X, _ = make_cloud("degenerate", 100, 8, 0)
    assert float(isoscore_star(X, torch.eye(8, dtype=torch.float64), 1.0)) == pytest.approx(1.0, abs=1e-12)
    # More shrinkage towards an isotropic target can only raise the score of a degenerate cloud.
    vals = [float(isoscore_star(X, torch.eye(8, dtype=torch.float64) * 1e6, z)) for z in (0.0, 0.2, 0.5)]
    assert vals == sorted(vals)


def test_isoscore_star_gradcheck():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(12, 5, generator=g, dtype=torch.float64, requires_grad=True)
    C0 = torch.eye(5, dtype=torch.float64) + 0.1
    assert torch.autograd.gradcheck(lambda x: isoscore_star(x, C0, 0.2), (X,))
    assert torch.autograd.gradcheck(lambda x: isoscore_star(x), (X,))


def test_isoscore_star_gradient_lowers_isotropy():
    # One gradient-descent step on IsoScore* must reduce it (it is a usable loss term).
    X = torch.randn(200, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).requires_grad_()
    before = isoscore_star(X)
    before.backward()
    before = before.detach()
    with torch.no_grad():
        after = isoscore_star(X - 5.0 * X.grad)
    assert float(after) < before.item()


def test_isoscore_star_bad_input():
    X, _ = make_cloud("random", 50, 4, 0)
    with pytest.raises(ValueError, match="needs a shrinkage covariance"):
        isoscore_star(X, None, 0.2)
    with pytest.raises(ValueError, match="must have shape \\(4, 4\\)"):
        isoscore_star(X, np.eye(3), 0.2)
    with pytest.raises(ValueError, match=r"zeta must be a number in \[0, 1\]"):
        isoscore_star(X, np.eye(4), 1.5)
    with pytest.raises(ValueError, match="C0 must be symmetric"):
        isoscore_star(X, np.triu(np.ones((4, 4))), 0.2)


# cosine anisotropy, S_inter / S_intra ------------------------------------------------------------


def brute_mean_cos(X: np.ndarray) -> float:
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    n = len(X)
    return (S.sum() - np.trace(S)) / (n * (n - 1))


@pytest.mark.parametrize("kind", ["random", "lowrank", "clustered"])
def test_cosine_anisotropy_exact(kind):
    X, _ = make_cloud(kind, 700, 30, 1)
    assert cosine_anisotropy(X) == pytest.approx(brute_mean_cos(X), abs=1e-12)


def test_cosine_anisotropy_sampled_estimates_exact():
    X, _ = make_cloud("lowrank", 2000, 30, 2)
    exact = brute_mean_cos(X)
    est = cosine_anisotropy(X, n_pairs=200_000, seed=3)
    assert est == pytest.approx(exact, abs=0.01)
    assert cosine_anisotropy(X, n_pairs=1000, seed=3) == cosine_anisotropy(X, n_pairs=1000, seed=3)


def test_cosine_anisotropy_hand_case():
    # Three unit vectors: e1, e1, e2 → pairs (e1,e1)=1, (e1,e2)=0 twice → mean 1/3.
    assert cosine_anisotropy(np.array([[1.0, 0], [2.0, 0], [0, 5.0]])) == pytest.approx(1 / 3, abs=1e-15)


def test_cosine_zero_row_rejected():
    with pytest.raises(ValueError, match="all-zero row"):
        cosine_anisotropy(np.array([[1.0, 0], [0, 0], [0, 1.0]]))


def brute_inter_intra(X, types):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    kinds = sorted(set(types))
    groups = [U[np.asarray(types) == t] for t in kinds]
    # Expectation over one random instance per type = mean over type pairs of mean cross cosines.
    inter = np.mean([(groups[a] @ groups[b].T).mean() for a in range(len(kinds)) for b in range(len(kinds)) if a != b])
    intra = np.mean([brute_mean_cos(g) for g in groups if len(g) >= 2])
    return inter, intra


def test_s_inter_intra_against_brute_force():
    rng = np.random.default_rng(0)
    types = rng.choice(["the", "bank", "river", "money", "a"], size=120)
    X = rng.normal(size=(120, 8)) + 2.0
    inter, intra = brute_inter_intra(X, types)
    assert s_inter(X, types) == pytest.approx(inter, abs=1e-12)
    assert s_intra(X, types) == pytest.approx(intra, abs=1e-12)


def test_s_inter_over_the_most_frequent_types_is_s_inter_of_their_points():
    """Each size's value is the brute-force S_inter of the points of the n most frequent types (ties: sorted types);
    a given frequency (one point per type, as static vectors) ranks instead of the instance counts."""
    rng = np.random.default_rng(3)
    names = np.array([f"t{i:02d}" for i in range(12)])
    types = names[np.minimum(rng.zipf(1.6, size=400) - 1, 11)]  # skewed counts, some tied
    X = rng.normal(size=(400, 6)) + rng.normal(size=6)
    counts = {t: int((types == t).sum()) for t in set(types)}
    ranked = sorted(counts, key=lambda t: (-counts[t], t))
    sizes = [len(ranked), 2, 5]
    got = s_inter_by_type_count(X, types, sizes)
    for n, value in zip(sizes, got):
        keep = np.isin(types, ranked[:n])
        assert value == pytest.approx(brute_inter_intra(X[keep], types[keep])[0], abs=1e-12)
    assert got[0] == pytest.approx(s_inter(X, types), abs=1e-12)
    # one point per type, ranked by a corpus frequency: the 3 with the largest
    one = X[:12]
    frequency = rng.permutation(12) + 1
    top = np.argsort(-frequency)[:3]
    expected = brute_inter_intra(one[top], names[top])[0]
    assert s_inter_by_type_count(one, names, [3], frequency=frequency)[0] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="in 2..12"):
        s_inter_by_type_count(one, names, [13])
    with pytest.raises(ValueError, match="one number per row"):
        s_inter_by_type_count(one, names, [3], frequency=frequency[:5])


def test_s_intra_skips_singletons_and_errors():
    X = np.array([[1.0, 0], [1.0, 0.1], [0, 1.0]])
    assert s_intra(X, [0, 0, 1]) == pytest.approx(brute_mean_cos(X[:2]), abs=1e-12)
    with pytest.raises(ValueError, match="at least one type with two"):
        s_intra(X, [0, 1, 2])
    with pytest.raises(ValueError, match="at least two distinct types"):
        s_inter(X, [0, 0, 0])
    with pytest.raises(ValueError, match="3 rows"):
        s_inter(X, [0, 1])


def test_isoscore_far_from_origin():
    # A large common offset must not cost precision (no XᵀX − nμμᵀ shortcut).
    X, _ = make_cloud("lowrank", 1000, 16, 8)
    assert isoscore(X + 1e6) == pytest.approx(isoscore_by_steps(X), abs=1e-9)
