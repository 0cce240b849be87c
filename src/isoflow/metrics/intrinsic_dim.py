"""Intrinsic dimension: local (LID, k-NN MLE) and global (TwoNN), Euclidean distances."""

from __future__ import annotations

import warnings

import torch

from ._validate import ArrayLike, as_points, distance_dtype, power_of_two_factor
from .device_policy import block_size, matmul

DEFAULT_BLOCK = 2048
_MARGIN = 8  # extra float32 candidates so that re-ranking in float64 cannot miss a true neighbour


def distinct_points(X: ArrayLike, what: str = "intrinsic dimension", *, warn: bool = True) -> torch.Tensor:
    """The distinct rows of ``X`` (``X`` itself when none repeats; else sorted, as ``torch.unique`` gives them), with a
    warning naming how many repeats were merged (``warn=False``: for a caller that reports the count itself).

    Both estimators below take logarithms of neighbour distances: a point repeated in the data (the same token
    state at every occurrence, e.g. a model's input embeddings, or a causal LM's sentence-initial token in every
    layer) has neighbours at distance 0, for which they are undefined, and counting each copy would weight the
    repeated point by its frequency. So they are computed on the distinct points.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    what : str
        What the warning says the points are for.
    warn : bool
        Whether to warn when points repeat.

    Returns
    -------
    torch.Tensor
        The distinct rows, on ``X``'s device.

    References
    ----------
    scikit-dimension (``skdim.id.TwoNN``, ``skdim.id.MLE``), whose handling of repeated points is compared in
    :func:`twonn`.

    Examples
    --------
    >>> import torch, warnings
    >>> from isoflow.metrics import distinct_points
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     distinct_points(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> str(caught[0].message)
    'intrinsic dimension: 1 repeated point(s) merged; estimated on the 2 distinct points of 3'"""
    x = as_points(X)
    distinct = torch.unique(x, dim=0)
    if distinct.shape[0] == x.shape[0]:
        return x
    if warn:
        warnings.warn(
            f"{what}: {x.shape[0] - distinct.shape[0]} repeated point(s) merged; estimated on the "
            f"{distinct.shape[0]} distinct points of {x.shape[0]}",
            stacklevel=3,
        )
    return distinct


def knn_distances(X: ArrayLike, k: int, *, block: int | None = None) -> torch.Tensor:
    """Sorted Euclidean distances from each point to its ``k`` nearest other points, (n, k) float64.

    Candidates come from a blocked ‖x‖²+‖y‖²−2x·y search in ``X``'s dtype
    (k + 8 per point); their distances are then recomputed exactly in float64
    from the differences and re-sorted, so float32 cancellation cannot distort
    small distances. Memory O(block·n).
    """
    x = as_points(X)
    x = x.to(distance_dtype(x))
    n = x.shape[0]
    if not 1 <= k <= n - 1:
        raise ValueError(f"k must be between 1 and n_points - 1 = {n - 1}; got {k}")
    # Distances of data near the overflow/underflow limits: compute on an exactly rescaled copy (a power of two),
    # then scale the distances back.
    x64 = x.to(torch.float64)
    factor = power_of_two_factor(x64)
    x64 = x64 * factor
    xc = (x64 - x64.mean(dim=0, keepdim=True)).to(x.dtype)
    sq = (xc * xc).sum(dim=1)
    m = min(k + _MARGIN, n - 1)
    block = block or block_size(n, x.device, x.dtype, DEFAULT_BLOCK)
    out = torch.empty(n, k, dtype=torch.float64, device=x.device)
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        D = (
            matmul(xc[i0:i1], xc.T).mul_(-2.0).add_(sq[i0:i1, None]).add_(sq[None, :])
        )  # faster CPU BLAS: device_policy.py
        rows = torch.arange(i1 - i0, device=x.device)
        D[rows, rows + i0] = float("inf")  # exclude the point itself
        cand = D.topk(m, dim=1, largest=False).indices
        # Exact float64 distances to the candidates, in row chunks of rows x m x d doubles kept to about 2 MB: a
        # chunk's two temporaries then stay in the CPU's cache (chunks of 64 MB were 3-10x slower, bound by first
        # touches of fresh memory); each distance is the same reduction over d whatever the chunk, so values are equal.
        step = max(1, (1 << 18) // (m * x.shape[1]))
        for r0 in range(0, i1 - i0, step):
            r1 = min(r0 + step, i1 - i0)
            exact = torch.linalg.vector_norm(x64[i0 + r0 : i0 + r1, None, :] - x64[cand[r0:r1]], dim=2)
            out[i0 + r0 : i0 + r1] = exact.sort(dim=1).values[:, :k]
    return out / factor


def lid_mle(X: ArrayLike, k: int = 20, *, reduce: str | None = "mean", block: int | None = None):
    r"""Local intrinsic dimension by the k-NN maximum-likelihood estimator (Levina & Bickel 2004; Amsaleg et al. 2015).

    :math:`\mathrm{LID}(x) = -\left(\frac1k\sum_{i=1}^{k}\log\frac{r_i(x)}{r_k(x)}\right)^{-1}`,
    with :math:`r_i(x)` the Euclidean distance from *x* to its *i*-th nearest other
    point (plain distances: Cai et al.'s code used squared ones, which halves the
    estimate). This is the form Cai et al. (ICLR 2021) use; scikit-dimension's
    ``MLE`` uses k − 1 in the numerator, i.e. ours × (k − 1)/k.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    k : neighbours per point (2 <= k <= n − 1).
    reduce : ``"mean"`` (the average LID Cai et al. report) → float;
        ``"harmonic"`` (the MLE-consistent pooling, scikit-dimension's ``comb="mle"``) → float;
        ``None`` → the per-point estimates, a float64 tensor of shape (n,).
    block : rows per block of the nearest-neighbour search (None: the device's size policy).

    Repeated points are merged first (:func:`distinct_points`, with a warning):
    the estimate is the distinct points' (per point: one value per distinct
    point, in :func:`distinct_points`' order).

    Returns
    -------
    float, or a float64 tensor of shape (n_distinct,)
        As ``reduce`` says.

    References
    ----------
    E. Levina, P. Bickel. *Maximum likelihood estimation of intrinsic dimension*. NeurIPS 2004. L. Amsaleg et al.
    *Estimating local intrinsic dimensionality*. KDD 2015.
    X. Cai, J. Huang, Y. Bian, K. Church. *Isotropy in the Contextual Embedding
    Space: Clusters and Manifolds*. ICLR 2021.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import lid_mle
    >>> g = torch.Generator().manual_seed(0)
    >>> flat = torch.rand(2000, 2, generator=g, dtype=torch.float64)
    >>> plane = torch.cat([flat, torch.zeros(2000, 1, dtype=torch.float64)], 1)
    >>> round(lid_mle(plane, k=20), 1)  # a square in 3-d: about 2 (the MLE is biased up near the border)
    2.2"""
    if k < 2:
        raise ValueError(f"LID needs k >= 2 neighbours; got {k}")
    return lid_from_distances(knn_distances(distinct_points(X, "LID"), k, block=block), reduce=reduce)


def lid_from_distances(r: torch.Tensor, *, reduce: str | None = "mean"):
    """:func:`lid_mle` from sorted neighbour distances ``r`` (n, k), e.g. from :func:`knn_distances` of distinct
    points. A point with a neighbour at distance 0 (a repeat) has no estimate (log 0): it is dropped with a warning."""
    k = r.shape[1]
    rk = r[:, -1:]
    lid = -1.0 / torch.log(r / rk).mean(dim=1)
    bad = ~torch.isfinite(lid) | (r[:, 0] == 0)
    if bool(bad.any()):
        warnings.warn(
            f"LID: dropping {int(bad.sum())} point(s) with a repeat among their {k} nearest neighbours (distance 0)",
            stacklevel=2,
        )
        lid = lid[~bad]
    if reduce is None:
        return lid
    if lid.numel() == 0:
        raise ValueError("LID is undefined: every point's neighbourhood consists of duplicates")
    if reduce == "mean":
        return float(lid.mean())
    if reduce == "harmonic":
        return float(1.0 / (1.0 / lid).mean())
    raise ValueError(f"reduce must be 'mean', 'harmonic' or None; got {reduce!r}")


def twonn(X: ArrayLike, *, discard_fraction: float = 0.1, method: str = "linear", block: int | None = None) -> float:
    r"""TwoNN intrinsic dimension (Facco, d'Errico, Rodriguez & Laio, Sci. Rep. 2017).

    For each point :math:`\mu = r_2/r_1`, the ratio of the distances to its second
    and first nearest neighbours, which is Pareto-distributed with shape = ID.
    Sort the :math:`\mu`, keep the smallest ``(1 - discard_fraction)·N`` (the tail
    is noisy), with empirical CDF :math:`F_i = i/N`, and either

    * ``method="linear"``: fit :math:`-\log(1-F_i) = d\,\log\mu_i` through the origin (least squares), or
    * ``method="mle"``: :math:`d = (n_{keep}-1)/(\sum_{kept}\log\mu + (N-n_{keep})\log\mu_{max\,kept})`
      (right-censored Pareto MLE; with no discard, :math:`(N-1)/\sum\log\mu`).

    Matches ``skdim.id.TwoNN`` (same parameters, same estimator) on distinct
    points. Repeated points are merged first (:func:`distinct_points`, with a
    warning): scikit-dimension drops the copies (r₁ = 0) but keeps the ratio 1 of
    their neighbours, for which two copies are equally near.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    discard_fraction : float
        The share of the largest ratios left out of the fit, in [0, 1).
    method : {"linear", "mle"}
        The fit (above).
    block : int or None
        Rows per block of the nearest-neighbour search (None: the device's size policy).

    Returns
    -------
    float
        The estimated intrinsic dimension.

    References
    ----------
    E. Facco, M. d'Errico, A. Rodriguez, A. Laio. *Estimating the intrinsic dimension of datasets by a minimal
    neighborhood information*. Scientific Reports 7, 2017.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import twonn
    >>> g = torch.Generator().manual_seed(0)
    >>> flat = torch.rand(2000, 2, generator=g, dtype=torch.float64)
    >>> plane = torch.cat([flat, torch.zeros(2000, 1, dtype=torch.float64)], 1)
    >>> round(twonn(plane), 1)  # a square in 3-d
    1.9
    """
    if method not in ("linear", "mle"):
        raise ValueError(f"method must be 'linear' or 'mle'; got {method!r}")
    if not 0.0 <= discard_fraction < 1.0:
        raise ValueError(f"discard_fraction must lie in [0, 1); got {discard_fraction}")
    r = knn_distances(distinct_points(X, "TwoNN"), 2, block=block)
    return twonn_from_distances(r, discard_fraction=discard_fraction, method=method)


def twonn_from_distances(r: torch.Tensor, *, discard_fraction: float = 0.1, method: str = "linear") -> float:
    """:func:`twonn` from sorted neighbour distances (n, ≥ 2): only the first two columns are used."""
    mu = r[:, 1] / r[:, 0]
    finite = torch.isfinite(mu)
    if not bool(finite.all()):
        warnings.warn(
            f"TwoNN: dropping {int((~finite).sum())} point(s) with a duplicate (zero distance to the nearest "
            f"neighbour)",
            stacklevel=2,
        )
        mu = mu[finite]
    N = mu.numel()
    n_keep = int(N * (1 - discard_fraction))
    if n_keep < 2:
        raise ValueError("TwoNN: fewer than 2 points left to estimate the dimension")
    log_mu = torch.log(torch.sort(mu).values[:n_keep])
    if method == "linear" and n_keep == N:
        raise ValueError(
            "TwoNN linear fit needs discard_fraction > 0: the largest ratio has F = 1 and -log(1 - F) is infinite; use "
            "method='mle' to keep every point"
        )
    if method == "mle":
        return float((n_keep - 1) / (log_mu.sum() + (N - n_keep) * log_mu[-1]))
    F = torch.arange(1, n_keep + 1, dtype=torch.float64, device=log_mu.device) / N
    y = -torch.log1p(-F)
    return float((log_mu * y).sum() / (log_mu * log_mu).sum())


__all__ = ["distinct_points", "knn_distances", "lid_from_distances", "lid_mle", "twonn", "twonn_from_distances"]
