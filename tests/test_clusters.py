"""k-means (vs scikit-learn), Cai et al.'s cluster selection and cluster-centred isotropy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from isoflow.metrics import cluster_centered, cosine_anisotropy, isoscore, kmeans, select_clusters
from isoflow.metrics.clusters import kmeans_plusplus, lloyd


def blobs(k=4, n_per=200, d=10, spread=0.3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=10.0, size=(k, d))
    y = np.repeat(np.arange(k), n_per)
    # Anisotropic within-cluster noise so that centring visibly changes isotropy.
    return centres[y] + rng.normal(scale=spread, size=(k * n_per, d)), y


def test_lloyd_matches_sklearn_from_same_init():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5))
    init = X[rng.choice(600, 4, replace=False)]
    ref = KMeans(n_clusters=4, init=init, n_init=1, tol=1e-12, max_iter=500, algorithm="lloyd").fit(X)
    labels, centres, inertia = lloyd(torch.from_numpy(X), torch.from_numpy(init), max_iter=500, tol=1e-12)
    np.testing.assert_allclose(centres.numpy(), ref.cluster_centers_, atol=1e-9)
    assert inertia == pytest.approx(ref.inertia_, rel=1e-9)
    assert adjusted_rand_score(labels.numpy(), ref.labels_) == 1.0


def test_lloyd_counts_its_iterations_as_scikit_learn_does():
    """The iterations a run's time is counted by (``iterations``): scikit-learn's ``n_iter_`` from the same centres,
    at its criterion's tolerances, one entry a start."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        X = np.concatenate([rng.normal(loc=c, size=(200, 6)) for c in rng.normal(scale=3, size=(4, 6))])
        init = X[rng.choice(len(X), 4, replace=False)]
        for tol in (1e-4, 1e-12):
            ref = KMeans(n_clusters=4, init=init, n_init=1, tol=tol, max_iter=300, algorithm="lloyd").fit(X)
            counted = []
            lloyd(torch.from_numpy(X), torch.from_numpy(init), max_iter=300, tol=tol, iterations=counted)
            assert counted == [ref.n_iter_] and ref.n_iter_ > 1
    counted = []
    kmeans(X, 4, n_init=3, seed=0, iterations=counted)
    assert len(counted) == 3 and all(1 <= n <= 300 for n in counted)
    lloyd(torch.from_numpy(X), torch.from_numpy(init), max_iter=2, tol=0.0, iterations=counted)
    assert counted[-1] == 2  # stopped by max_iter


def test_kmeans_finds_blobs_and_is_seeded():
    X, y = blobs()
    labels, centres = kmeans(X, 4, seed=1)
    assert adjusted_rand_score(labels.numpy(), y) == 1.0
    assert torch.equal(kmeans(X, 4, seed=1)[0], labels)


def test_kmeans_plusplus_spreads_centres():
    X, y = blobs(k=3, seed=2)
    c = kmeans_plusplus(torch.from_numpy(X), 3, torch.Generator().manual_seed(0))
    # One seed per blob (far apart blobs make any other outcome astronomically unlikely).
    nearest = ((torch.from_numpy(X)[:, None] - c[None]) ** 2).sum(-1).argmin(0)
    assert len(set(y[nearest.numpy()])) == 3


def test_select_clusters_picks_true_k():
    X, y = blobs(k=4)
    choice = select_clusters(X, range(2, 8))
    assert choice.k == 4
    assert max(choice.silhouettes, key=choice.silhouettes.get) == 4
    assert adjusted_rand_score(choice.labels.numpy(), y) == 1.0


def test_select_clusters_single_gaussian_is_one_cluster():
    X = np.random.default_rng(0).normal(size=(500, 20))
    choice = select_clusters(X, range(2, 5))
    assert choice.k == 1 and int(choice.labels.max()) == 0
    assert all(s < 0.1 for s in choice.silhouettes.values())


def test_cluster_centered_isotropy_is_local():
    # Globally the blobs make the space anisotropic; removing cluster means leaves isotropic noise.
    X, _ = blobs(k=3, d=10, spread=1.0)
    glob = isoscore(X)
    local = cluster_centered(X, k_values=range(2, 6))
    assert glob < 0.5 and local > 0.95
    # Any metric can be applied; centred noise has no common direction.
    assert abs(cluster_centered(X, cosine_anisotropy, k_values=range(2, 6))) < 0.05


def test_bad_k():
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="k must be between 1"):
        kmeans(X, 11)
    with pytest.raises(ValueError, match="k values must lie in 2"):
        select_clusters(X, [1, 2])
