"""Outlier ("rogue") dimensions: the few coordinates whose magnitude dwarfs the rest, and how much of the mean cosine
they carry.

* :func:`mean_abs_activation`: a_k = mean_i |x_ik|, the activation profile of the I-STAR poster's Figure 1;
* :func:`peak_ratio`: max_k a_k / median_k a_k, threshold-free;
* :func:`outlier_dimensions`: the dimensions with a_k ≥ ``factor`` × median_k a_k, largest first;
* :func:`cosine_shares`: each dimension's share of the mean cosine of distinct pairs (Timkey & van Schijndel 2021);
* :func:`drop_dimensions`: the points without some dimensions, to recompute any measure without them;
* :func:`outlier_points`: the points whose distance from the mean dwarfs the median point's (a causal LM's massive
  activations: the attention sink at the first position, and wherever else it lands), largest first;
* :func:`points_variance_share`: the share of the centred variance some points hold — whose number a measure that
  centres (CKA, IsoScore) is.

References: W. Timkey, M. van Schijndel. *All bark and no bite: rogue dimensions in transformer language models
obscure representational quality*. EMNLP 2021. O. Kovaleva et al. *BERT busters: outlier dimensions that disrupt
transformers*. Findings of ACL 2021. W. Rudman, C. Chen, C. Eickhoff. *Outlier dimensions encode task-specific
knowledge*. EMNLP 2023 (there: variance ≥ 5 × the mean variance; here the magnitude against the median, which the
outliers themselves cannot inflate). M. Sun, X. Chen, J. Z. Kolter, Z. Liu. *Massive activations in large language
models*. COLM 2024 (arXiv 2402.17762: a few tokens' activations 10⁴ times the median, acting as biases). T. Davari et
al. *Reliability of CKA as a similarity measure in deep learning*. ICLR 2023 (CKA moved by a few points).
"""

from __future__ import annotations

import torch

from ._validate import ArrayLike, as_points

OUTLIER_FACTOR = 5.0  # default: a dimension ≥ 5 × the median dimension's mean |activation| is an outlier
# default: a point ≥ 10 × the median point's distance from the mean (100 × its squared distance, the part of the
# centred variance it holds) is an outlier
OUTLIER_POINT_FACTOR = 10.0


def mean_abs_activation(X: ArrayLike) -> torch.Tensor:
    """a_k = mean_i |x_ik|, float64, shape (dim,), on X's device.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).

    Returns
    -------
    torch.Tensor
        The profile a, float64, shape (dim,).

    References
    ----------
    W. Rudman, C. Eickhoff. *Stable Anisotropic Regularization*. ICLR 2024 (its Figure 1: this profile).
    O. Kovaleva, S. Kulshreshtha, A. Rogers, A. Rumshisky. *BERT busters: outlier dimensions that disrupt
    transformers*. Findings of ACL 2021.

    Examples
    --------
    >>> mean_abs_activation([[1.0, -2.0], [3.0, 0.0]]).tolist()
    [2.0, 1.0]"""
    return as_points(X, min_points=1).to(torch.float64).abs().mean(dim=0)


def _median(a: torch.Tensor) -> float:
    return float(torch.quantile(a, 0.5))  # the mean of the two middle values for an even count, as NumPy's


def peak_ratio(X: ArrayLike) -> float:
    """max_k a_k / median_k a_k of the mean |activation|. A space without outlier dimensions stays near 1–3.
    (A profile a already computed is its own one-row X: ``peak_ratio(a[None, :])``.)

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).

    Returns
    -------
    float
        max_k a_k / median_k a_k, at least 1.

    References
    ----------
    O. Kovaleva, S. Kulshreshtha, A. Rogers, A. Rumshisky. *BERT busters: outlier dimensions that disrupt
    transformers*. Findings of ACL 2021.
    W. Timkey, M. van Schijndel. *All bark and no bite: rogue dimensions in transformer language models obscure
    representational quality*. EMNLP 2021.

    Examples
    --------
    >>> peak_ratio([[1.0, 1.0, 2.0, 8.0]])
    5.333333333333333"""
    a = mean_abs_activation(X)
    return float(a.max()) / _median(a)


def outlier_dimensions(X: ArrayLike, factor: float = OUTLIER_FACTOR) -> list[int]:
    r"""Dimensions k with :math:`a_k \ge` ``factor`` :math:`\times \operatorname{median}_j a_j`, largest first.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    factor : float
        The multiple of the median magnitude a dimension must reach (> 0).

    Returns
    -------
    list of int
        The dimensions, largest magnitude first.

    References
    ----------
    O. Kovaleva, S. Kulshreshtha, A. Rogers, A. Rumshisky. *BERT busters: outlier dimensions that disrupt
    transformers*. Findings of ACL 2021.
    W. Rudman, C. Chen, C. Eickhoff. *Outlier dimensions encode task-specific knowledge*. EMNLP 2023 (there: the
    variance against 5 × the mean variance).

    Examples
    --------
    >>> outlier_dimensions([[0.1, 1.0, 0.2, 9.0, 0.1], [0.1, -1.0, 0.2, -7.0, 0.1]], factor=5)
    [3, 1]"""
    if not factor > 0:
        raise ValueError(f"factor must be > 0; got {factor}")
    a = mean_abs_activation(X)
    threshold = factor * _median(a)
    return [int(k) for k in torch.argsort(a, descending=True) if float(a[k]) >= threshold]


def cosine_shares(X: ArrayLike) -> torch.Tensor:
    r"""Each dimension's contribution to the mean cosine of all distinct pairs, and their sum is that mean cosine
    (:func:`isoflow.metrics.cosine_anisotropy`). With :math:`u_i = x_i / \lVert x_i \rVert`,

    .. math:: CC_k = \frac{1}{n(n-1)} \sum_{i \ne j} u_{ik} u_{jk}
              = \frac{(\sum_i u_{ik})^2 - \sum_i u_{ik}^2}{n(n-1)},

    O(n·d), float64 (Timkey & van Schijndel 2021). Zero vectors have no direction and are left out.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).

    Returns
    -------
    torch.Tensor
        CC_k, float64, shape (dim,); their sum is the mean cosine.

    References
    ----------
    W. Timkey, M. van Schijndel. *All bark and no bite: rogue dimensions in transformer language models obscure
    representational quality*. EMNLP 2021.

    Examples
    --------
    >>> shares = cosine_shares([[1.0, 1.0], [1.0, -1.0], [2.0, 0.0]])  # a share may be negative
    >>> [round(v, 4) for v in shares.tolist()], round(float(shares.sum()), 4)  # the sum: the mean cosine, 0.4714
    ([0.6381, -0.1667], 0.4714)"""
    x = as_points(X).to(torch.float64)
    norms = torch.linalg.vector_norm(x, dim=1)
    u = x[norms > 0] / norms[norms > 0, None]
    n = u.shape[0]
    if n < 2:
        raise ValueError(f"cosine shares need at least 2 non-zero points; got {n}")
    return (u.sum(dim=0) ** 2 - (u * u).sum(dim=0)) / (n * (n - 1))


def drop_dimensions(X: ArrayLike, dims) -> torch.Tensor:
    """X without the columns ``dims`` (on X's device, X's dtype).

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    dims : iterable of int
        The columns to leave out.

    Returns
    -------
    torch.Tensor
        The points without them (``X``'s device and dtype).

    References
    ----------
    W. Timkey, M. van Schijndel. *All bark and no bite: rogue dimensions in transformer language models obscure
    representational quality*. EMNLP 2021. (measures recomputed without the rogue dimensions)

    Examples
    --------
    >>> drop_dimensions([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [1]).tolist()
    [[1.0, 3.0], [4.0, 6.0]]"""
    x = as_points(X, min_points=1)
    keep = torch.ones(x.shape[1], dtype=torch.bool, device=x.device)
    keep[list(dims)] = False
    return x[:, keep]


def _centred_sq_norms(x: torch.Tensor) -> torch.Tensor:
    x = x.to(torch.float64)
    c = x - x.mean(dim=0)
    return (c * c).sum(dim=1)


def outlier_points(X: ArrayLike, factor: float = OUTLIER_POINT_FACTOR) -> list[int]:
    r"""Points i with :math:`\lVert x_i - \bar x \rVert \ge` ``factor`` :math:`\times \operatorname{median}_j
    \lVert x_j - \bar x \rVert`, farthest first (float64; the mean over all the points, the outliers included).

    A few points this far out hold most of the centred variance, so a measure that centres — linear CKA, IsoScore —
    describes them rather than the space (:func:`points_variance_share` says how much). On a causal LM they are the
    massive activations of attention sinks: the first position, and on SmolLM2 also the second of a few sentences.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    factor : float
        The multiple of the median distance from the mean a point must reach (> 0).

    Returns
    -------
    list of int
        The points' row indices, farthest first.

    References
    ----------
    M. Sun, X. Chen, J. Z. Kolter, Z. Liu. *Massive activations in large language models*. COLM 2024.
    T. Davari, S. Horoi, A. Natik, G. Lajoie, G. Wolf, E. Belilovsky. *Reliability of CKA as a similarity measure in
    deep learning*. ICLR 2023.

    Examples
    --------
    >>> X = [[0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 0.0], [40.0, 40.0]]
    >>> outlier_points(X), outlier_points(X, factor=3)  # 4.1 times the median distance (it moves the mean too)
    ([], [4])"""
    if not factor > 0:
        raise ValueError(f"factor must be > 0; got {factor}")
    sq = _centred_sq_norms(as_points(X, min_points=1))
    threshold = factor**2 * _median(sq)  # squared distances: the factor squared
    far = torch.nonzero((sq >= threshold) & (sq > 0)).squeeze(1)
    return far[torch.argsort(sq[far], descending=True)].tolist()


def points_variance_share(X: ArrayLike, points) -> float:
    r"""The share of the centred variance held by ``points``: :math:`\sum_{i \in P} \lVert x_i - \bar x \rVert^2 /
    \sum_i \lVert x_i - \bar x \rVert^2` (the trace of the covariance is the mean squared distance from the mean),
    float64.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    points : iterable of int, or a boolean mask of length n_points
        The rows whose share is asked.

    Returns
    -------
    float
        The share, in [0, 1]; 0 for points that do not vary.

    References
    ----------
    T. Davari, S. Horoi, A. Natik, G. Lajoie, G. Wolf, E. Belilovsky. *Reliability of CKA as a similarity measure in
    deep learning*. ICLR 2023.

    Examples
    --------
    >>> X = [[-1.0, 0.0], [1.0, 0.0], [-3.0, 0.0], [3.0, 0.0]]  # squared distances 1, 1, 9, 9
    >>> points_variance_share(X, [2, 3]), points_variance_share(X, [True, False, False, False])
    (0.9, 0.05)"""
    sq = _centred_sq_norms(as_points(X, min_points=1))
    total = float(sq.sum())
    if total == 0:
        return 0.0
    picked = torch.as_tensor(points, device=sq.device)
    if picked.dtype != torch.bool:
        picked = picked.long()
    return float(sq[picked].sum()) / total


__all__ = [
    "OUTLIER_FACTOR",
    "OUTLIER_POINT_FACTOR",
    "cosine_shares",
    "drop_dimensions",
    "mean_abs_activation",
    "outlier_dimensions",
    "outlier_points",
    "peak_ratio",
    "points_variance_share",
]
