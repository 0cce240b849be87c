"""Linear CKA (isoflow.metrics.linear_cka) against an independent computation: HSIC from the n × n Gram matrices with
the centring matrix H (biased) and Song et al.'s unbiased estimator written from its formula (debiased), in NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isoflow.metrics import linear_cka, linear_cka_matrices, linear_cka_matrix


def gram_cka(X: np.ndarray, Y: np.ndarray, debiased: bool = False) -> float:
    n = X.shape[0]
    K, L = X @ X.T, Y @ Y.T  # uncentred: H centres them (biased); Song's estimator does not centre at all

    def hsic(A, B):
        if not debiased:
            H = np.eye(n) - np.ones((n, n)) / n
            return np.trace(A @ H @ B @ H) / (n - 1) ** 2
        A, B = A - np.diag(np.diag(A)), B - np.diag(np.diag(B))
        one = np.ones(n)
        return (
            np.trace(A @ B)
            + (one @ A @ one) * (one @ B @ one) / ((n - 1) * (n - 2))
            - 2 / (n - 2) * (one @ A @ B @ one)
        ) / (n * (n - 3))

    return hsic(K, L) / np.sqrt(hsic(K, K) * hsic(L, L))


def clouds(n, d1, d2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d1)) * np.logspace(0, -1, d1) + 3.0  # anisotropic, off the origin
    Y = np.tanh(X @ rng.normal(size=(d1, d2))) + 0.3 * rng.normal(size=(n, d2))
    return X, Y


@pytest.mark.parametrize("n,d1,d2", [(200, 12, 7), (9, 30, 20)])  # d × d products, and n × n Gram matrices
@pytest.mark.parametrize("debiased", [False, True])
def test_linear_cka_against_gram_matrices(n, d1, d2, debiased):
    X, Y = clouds(n, d1, d2)
    assert linear_cka(X, Y, debiased=debiased) == pytest.approx(gram_cka(X, Y, debiased), rel=1e-9)


def test_cka_invariances(device):
    """1 for an orthogonal map and unchanged by isotropic scaling; not invariant to a general linear map."""
    X, Y = (torch.as_tensor(a, device=device) for a in clouds(300, 10, 10, seed=1))
    Q, _ = torch.linalg.qr(torch.randn(10, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(3)))
    Q = Q.to(device)
    assert linear_cka(X, X @ Q) == pytest.approx(1.0, abs=1e-12)
    assert linear_cka(X, 7.5 * X @ Q, debiased=True) == pytest.approx(1.0, abs=1e-12)
    assert linear_cka(X, Y) == pytest.approx(linear_cka(0.01 * X, 50 * Y @ Q), rel=1e-12)
    A = torch.diag(torch.logspace(0, 2, 10, dtype=torch.float64)).to(device)
    assert linear_cka(X, X @ A) < 0.9


def test_debiased_cka_of_independent_clouds_is_near_zero_where_the_biased_one_is_not():
    rng = np.random.default_rng(0)
    biased, debiased = [], []
    for _ in range(20):
        X, Z = rng.normal(size=(50, 40)), rng.normal(size=(50, 40))
        biased.append(linear_cka(X, Z))
        debiased.append(linear_cka(X, Z, debiased=True))
    assert np.mean(biased) > 0.4 and abs(np.mean(debiased)) < 0.01


def test_float32_points_are_summed_in_float64_and_bad_input_is_refused():
    X, Y = clouds(5000, 16, 8, seed=2)
    assert linear_cka(X.astype(np.float32), Y.astype(np.float32)) == pytest.approx(linear_cka(X, Y), rel=1e-5)
    with pytest.raises(ValueError, match="same points"):
        linear_cka(X, Y[:-1])
    with pytest.raises(ValueError, match="all equal"):
        linear_cka(np.ones((10, 3)), Y[:10])
    with pytest.raises(ValueError, match="at least 4"):
        linear_cka(X[:3], Y[:3], debiased=True)


@pytest.mark.parametrize("n", [150, 9])  # the d × d products, and the n × n Gram matrices kept once per layer
@pytest.mark.parametrize("debiased", [False, True])
def test_the_cka_matrix_of_layers_is_every_pair_computed_independently(n, debiased):
    """linear_cka_matrix: entry (i, j) is the Gram-matrix CKA of layers i and j (a model's block structure), the
    diagonal 1, symmetric; layers of different widths; an all-equal layer refused by its index."""
    rng = np.random.default_rng(3)
    first = rng.normal(size=(n, 12)) * np.logspace(0, -1, 12) + 2.0
    layers = [first]
    for width in (7, 20, 12):  # each layer a noisy non-linear map of the one before
        layers.append(
            np.tanh(layers[-1] @ rng.normal(size=(layers[-1].shape[1], width))) + 0.2 * rng.normal(size=(n, width))
        )
    got = linear_cka_matrix(layers, debiased=debiased).numpy()
    expected = np.array([[gram_cka(a, b, debiased) for b in layers] for a in layers])
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert np.allclose(np.diag(got), 1.0) and np.array_equal(got, got.T)
    with pytest.raises(ValueError, match=r"whose points are all equal \(representation 1\)"):
        linear_cka_matrix([first, np.ones((n, 3))])
    with pytest.raises(ValueError, match="same points"):
        linear_cka_matrix([first, first[:-1]])


@pytest.mark.parametrize("n", [150, 9])  # the d × d products, and the n × n Gram matrices
def test_two_models_layers_against_each_other_and_both_estimators_at_once(n):
    """linear_cka_matrix(left, others=right): entry (i, j) is the Gram-matrix CKA of left[i] and right[j] (two models'
    layers on the same points); linear_cka_matrices gives the biased and debiased matrices of the same pairs, as two
    calls would; an all-equal representation on the right is refused by its index there."""
    rng = np.random.default_rng(4)
    base = rng.normal(size=(n, 10)) * np.logspace(0, -1, 10) + 1.5
    left = [base, np.tanh(base @ rng.normal(size=(10, 6)))]
    right = [np.tanh(base @ rng.normal(size=(10, w))) + 0.3 * rng.normal(size=(n, w)) for w in (5, 14, 10)]
    for debiased in (False, True):
        got = linear_cka_matrix(left, others=right, debiased=debiased).numpy()
        expected = np.array([[gram_cka(a, b, debiased) for b in right] for a in left])
        assert got.shape == (2, 3) and got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    biased, debiased = linear_cka_matrices(left + right)
    assert torch.equal(biased, linear_cka_matrix(left + right))
    assert torch.allclose(debiased, linear_cka_matrix(left + right, debiased=True), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match=r"all equal \(others\[1\]\)"):
        linear_cka_matrix(left, others=[right[0], np.ones((n, 3))])
    with pytest.raises(ValueError, match="at least one representation on each side"):
        linear_cka_matrix(left, others=[])
