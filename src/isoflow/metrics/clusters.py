"""Cluster-centred (local) isotropy, after Cai et al. (ICLR 2021): k-means, k chosen by silhouette.

k-means is implemented here in torch (Lloyd iterations, k-means++ seeding) so
that it runs on the input's device; its result is tested against scikit-learn's
``KMeans`` started from the same centres.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from ._validate import ArrayLike, as_points, distance_dtype, encode_labels, rescaled
from .isotropy import isoscore
from .silhouette import silhouette_tensor


def _sq_dists(x: torch.Tensor, centres: torch.Tensor, xx: torch.Tensor | None = None) -> torch.Tensor:
    """Squared distances (n, k); ``xx`` = the rows' squared norms, when a loop has them already."""
    xx = (x * x).sum(1) if xx is None else xx
    return torch.addmm((centres * centres).sum(1)[None, :], x, centres.T, alpha=-2.0).add_(xx[:, None]).clamp_(min=0.0)


def kmeans_plusplus(x: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """k-means++ seeding (Arthur & Vassilvitskii 2007): each new centre drawn ∝ squared distance to the nearest one."""
    n = x.shape[0]
    xx = (x * x).sum(1)
    idx = [int(torch.randint(0, n, (1,), generator=generator))]
    d2 = _sq_dists(x, x[idx], xx)[:, 0]
    for _ in range(1, k):
        p = d2.cpu()
        nxt = (
            int(torch.multinomial(p / p.sum(), 1, generator=generator))
            if float(p.sum()) > 0
            else int(torch.randint(0, n, (1,), generator=generator))
        )
        idx.append(nxt)
        d2 = torch.minimum(d2, _sq_dists(x, x[nxt : nxt + 1], xx)[:, 0])
    return x[idx].clone()


def lloyd(
    x: torch.Tensor,
    centres: torch.Tensor,
    *,
    max_iter: int = 300,
    tol: float = 1e-10,
    dtype: torch.dtype = torch.float64,
    variance: float | None = None,
    iterations: list | None = None,
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Lloyd iterations from given centres, in ``dtype`` (float64 by default; float32 halves the time, as
    scikit-learn computes float32 input). Returns (labels, centres, inertia).

    Stops when the total squared centre shift falls below ``tol`` times the mean
    per-feature variance (scikit-learn's criterion; ``variance``: that mean, when the caller has it already).
    An emptied cluster keeps its centre. ``iterations``: a list the number of iterations run is appended to
    (scikit-learn's ``n_iter_``; each is one n × k distance product, and one more gives the labels): what a
    run's time is counted by.
    """
    x = x.to(dtype)
    xx = (x * x).sum(1)  # once, not per iteration
    c = centres.to(dtype).clone()
    k = c.shape[0]
    tol_abs = tol * (float(x.var(dim=0).mean()) if variance is None else variance)
    run = 0
    for _ in range(max_iter):
        run += 1
        labels = _sq_dists(x, c, xx).argmin(dim=1)
        sums = torch.zeros_like(c).index_add_(0, labels, x)
        counts = torch.bincount(labels, minlength=k).to(x.dtype)
        new = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None], c)
        shift = float(((new - c) ** 2).sum())
        c = new
        if shift <= tol_abs:
            break
    if iterations is not None:
        iterations.append(run)
    d2 = _sq_dists(x, c, xx)
    labels = d2.argmin(dim=1)
    return labels, c, float(d2.gather(1, labels[:, None]).sum())


def kmeans(
    X: ArrayLike,
    k: int,
    *,
    n_init: int = 3,
    seed: int = 0,
    max_iter: int = 300,
    tol: float = 1e-10,
    dtype: torch.dtype = torch.float64,
    iterations: list | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """k-means (best inertia of ``n_init`` k-means++ starts). Returns (labels (n,), centres (k, dim)).
    ``dtype``: of the whole computation (:func:`lloyd`); ``iterations``: a list each start's Lloyd iterations are
    appended to."""
    x = as_points(X).to(dtype)
    if not 1 <= k <= x.shape[0]:
        raise ValueError(f"k must be between 1 and n_points = {x.shape[0]}; got {k}")
    g = torch.Generator(device="cpu").manual_seed(seed)
    variance = float(x.var(dim=0).mean())
    best = None
    for _ in range(n_init):
        labels, centres, inertia = lloyd(
            x,
            kmeans_plusplus(x, k, g),
            max_iter=max_iter,
            tol=tol,
            dtype=dtype,
            variance=variance,
            iterations=iterations,
        )
        if best is None or inertia < best[2]:
            best = (labels, centres, inertia)
    return best[0], best[1]


def subtract_cluster_means(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``x_i - mean of x_i's cluster`` for every row, float64; ``labels`` are codes 0..k-1."""
    x64 = x.to(torch.float64)
    k = int(labels.max()) + 1
    means = torch.zeros(k, x.shape[1], dtype=torch.float64, device=x.device).index_add_(0, labels, x64)
    means /= torch.bincount(labels, minlength=k).to(torch.float64)[:, None]
    return x64 - means[labels]


@dataclass(frozen=True)
class ClusterChoice:
    """Outcome of :func:`select_clusters`: labels, the chosen k, and the silhouette of each tried k."""

    labels: torch.Tensor
    k: int
    silhouettes: dict[int, float]


def select_clusters(
    X: ArrayLike,
    k_values: Iterable[int] = range(2, 11),
    *,
    min_silhouette: float = 0.1,
    seed: int = 0,
    n_init: int = 3,
    tol: float = 1e-10,
    max_iter: int = 300,
) -> ClusterChoice:
    """Cai et al.'s clustering: k-means for each k, keep the k with the best silhouette;
    if even that silhouette is below ``min_silhouette``, treat the data as one cluster (k = 1).

    ``n_init``, ``tol`` and ``max_iter`` are k-means' (:func:`lloyd`'s criterion; scikit-learn's default tol is
    1e-4, which the layer analysis uses; the tight default here matches scikit-learn's result to 1e-9)."""
    x = as_points(X)
    x = rescaled(x.to(distance_dtype(x)))  # the partition and silhouettes are scale-free; distances of 1e200 are not
    scores: dict[int, float] = {}
    best: tuple[float, int, torch.Tensor] | None = None
    for k in k_values:
        if not 2 <= k <= x.shape[0] - 1:
            raise ValueError(f"k values must lie in 2 .. n_points - 1 = {x.shape[0] - 1}; got {k}")
        labels, _ = kmeans(x, k, seed=seed, n_init=n_init, tol=tol, max_iter=max_iter)
        clusters = encode_labels(labels, device=x.device)
        if clusters.k < 2:  # k-means collapsed (e.g. many duplicates)
            continue
        s = float(silhouette_tensor(x, clusters))
        scores[k] = s
        if best is None or s > best[0]:
            best = (s, k, labels)
    if best is None or best[0] < min_silhouette:
        return ClusterChoice(torch.zeros(x.shape[0], dtype=torch.int64, device=x.device), 1, scores)
    return ClusterChoice(best[2], best[1], scores)


def cluster_centered(
    X: ArrayLike,
    metric: Callable[[torch.Tensor], float] = isoscore,
    *,
    k_values: Iterable[int] = range(2, 11),
    min_silhouette: float = 0.1,
    seed: int = 0,
) -> float:
    r"""A global metric recomputed after removing each cluster's mean (Cai et al., ICLR 2021).

    Cluster with :func:`select_clusters` (k-means, k by best silhouette, one
    cluster if it stays below ``min_silhouette``), replace every point
    :math:`x_i` by :math:`x_i - \mu_{c(i)}`, and return ``metric`` of the result
    (default :func:`isoscore`; any ``(n, dim) -> float`` works, e.g.
    :func:`cosine_anisotropy`). Cai et al. find embedding spaces nearly
    isotropic within clusters even when they are anisotropic globally.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    metric : callable
        ``(n, dim) -> float``, computed on the cluster-centred points.
    k_values : iterable of int
        The K tried for K-means.
    min_silhouette : float
        Below this best silhouette the points are one cluster (only the global mean is removed).
    seed : int
        K-means' seed.

    Returns
    -------
    float
        ``metric`` of the cluster-centred points.

    References
    ----------
    X. Cai, J. Huang, Y. Bian, K. Church. *Isotropy in the Contextual Embedding
    Space: Clusters and Manifolds*. ICLR 2021.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import cluster_centered, isoscore
    >>> blob = torch.randn(400, 2, generator=torch.Generator().manual_seed(0))
    >>> X = torch.cat([blob + torch.tensor([8., 0.]), blob - torch.tensor([8., 0.])])  # two round clusters on a line
    >>> round(isoscore(X), 2), round(cluster_centered(X), 2)  # anisotropic as a whole, isotropic within the clusters
    (0.04, 0.97)"""
    x = as_points(X)
    choice = select_clusters(x, k_values, min_silhouette=min_silhouette, seed=seed)
    return metric(subtract_cluster_means(x, choice.labels))


__all__ = [
    "kmeans",
    "kmeans_plusplus",
    "lloyd",
    "select_clusters",
    "subtract_cluster_means",
    "ClusterChoice",
    "cluster_centered",
]
