r"""Spectral and contrastive geometry of a point cloud: how many directions it uses, how fast its spectrum decays, how
uniformly its directions cover the sphere.

From the singular values :math:`\sigma_k` of the points (rows), or the eigenvalues :math:`\lambda_k` of their
covariance (centred: :math:`\lambda_k = \sigma_k(X_c)^2/(n-1)`):

* :func:`participation_ratio` — :math:`(\sum\lambda)^2/\sum\lambda^2` of the covariance; IsoScore is exactly
  :math:`(\mathrm{PR} - 1)/(d - 1)` (:func:`isoflow.metrics.isoscore`);
* :func:`effective_rank` — :math:`\exp(-\sum p_k\log p_k)`, :math:`p_k = \sigma_k/\sum\sigma` (Roy & Vetterli 2007;
  RankMe, Garrido et al. 2023, on the embeddings as they are, not centred: our default);
* :func:`variance_effective_rank` — the same entropy over the covariance's eigenvalues, :math:`p_k = \lambda_k/\sum
  \lambda` (the explained-variance ratios, σ² of the centred points): RankMe as Li et al. (2025) compute it on
  language models' checkpoints; it weighs strong directions more than :func:`effective_rank` does, so it is smaller;
* :func:`stable_rank` — :math:`\sum\sigma^2/\max\sigma^2`;
* :func:`alpha_req` — the decay :math:`\alpha` of the covariance's eigenspectrum, :math:`\lambda_k \propto k^{-\alpha}`,
  a least-squares line through :math:`(\log k, \log\lambda_k)` over a stated range of k (Agrawal et al. 2022); or,
  ``weighted``, each k weighted by 1/k as Stringer et al. (2019) fit it and Li et al. (2025) use it over k = 12..100
  (:data:`LI_ALPHA_RANGE`);
* :func:`uniformity` and :func:`alignment` — Wang & Isola (2020) on L2-normalised points: the log of the mean
  Gaussian potential over all pairs, and the mean distance of positive pairs.

The spectra come from the smaller of XᵀX and XXᵀ (the same non-zero eigenvalues), float64, on the input's device — of
float32 points too, whose rows are taken to float64 a chunk at a time before they are multiplied: a direction the
points lack (the mean after a LayerNorm) then gets no eigenvalue from the products' rounding, which float32 products
gave one of 1e-12 to 1e-10 of the largest, depending on the CPU's kernels, and which the fits over the whole numerical
rank counted; the pairwise sums of :func:`uniformity` in blocks (memory O(block²)), exactly.

References: O. Roy, M. Vetterli. *The effective rank: a measure of effective dimensionality*. EUSIPCO 2007.
Q. Garrido, R. Balestriero, L. Najman, Y. LeCun. *RankMe: Assessing the downstream performance of pretrained
self-supervised representations by their rank*. ICML 2023. K. K. Agrawal, A. K. Mondal, A. Ghosh, B. Richards.
*α-ReQ: Assessing representation quality in self-supervised learning by measuring eigenspectrum decay*. NeurIPS 2022.
M. Z. Li, K. K. Agrawal, A. Ghosh, K. K. Teru, A. Santoro, G. Lajoie, B. A. Richards. *Tracing the representation
geometry of language models from pretraining to post-training*. NeurIPS 2025. T. Wang, P. Isola. *Understanding
contrastive representation learning through alignment and uniformity on the hypersphere*. ICML 2020.
C. Stringer, M. Pachitariu, N. Steinmetz, M. Carandini, K. D. Harris. *High-dimensional geometry of population
responses in visual cortex*. Nature 571, 2019.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._validate import SUM_CHUNK_ROWS, ArrayLike, as_points, power_of_two_factor
from .device_policy import numpy_blas
from .isotropy import _centred_rescaled, _gram_or_scatter, _participation_ratio, _unit_rows, covariance

# The ranks Li et al. (2025) fit α-ReQ over, weighted 1/k: their code (rankme_alpha_scripts, utils/powerlaw.py) passes
# np.arange(11, 100) of the 0-based spectrum to Stringer et al.'s fit, which reads ranks 12 to 100.
LI_ALPHA_RANGE = (12, 100)

UNIFORMITY_BLOCK = 1024  # rows per block of the pairwise sums: at most 1,024² float64 values at once


def _eigenvalues(X: ArrayLike, centred: bool) -> torch.Tensor:
    """The eigenvalues of XᵀX (``centred``: of Xcᵀ·Xc), descending, float64, at least 0 (those within rounding of 0 are
    0), up to a common power-of-two factor (every measure here is scale-free)."""
    x = as_points(X)
    if x.dtype == torch.float32 and x.shape[0] >= x.shape[1]:
        return descending_eigenvalues(float64_scatter(x, centred=centred), x.shape[0])
    x = x.to(torch.float64)  # the float64 copy is no larger than the Gram matrix it makes where n < d
    xc = _centred_rescaled(x)[0] if centred else x * power_of_two_factor(x)
    return descending_eigenvalues(_gram_or_scatter(xc).to(xc.device), max(x.shape))


def float64_scatter(x: torch.Tensor, *, centred: bool = False) -> torch.Tensor:
    """XᵀX of float32 points ``x`` (``centred``: of X less its column means), rescaled by a power of two, in float64
    products: :data:`~isoflow.metrics._validate.SUM_CHUNK_ROWS` rows taken to float64 at a time, so that it holds what a
    float64 copy of the points gives (to float64's rounding) without the copy. In NumPy on a host whose CPU BLAS is
    NumPy's (:mod:`.device_policy`)."""
    n, d = x.shape
    f = float(power_of_two_factor(x))
    if numpy_blas(x):
        a = x.numpy()
        mean = a.mean(axis=0, dtype=np.float64) * f if centred else 0.0
        G = np.zeros((d, d))
        for i0 in range(0, n, SUM_CHUNK_ROWS):
            chunk = a[i0 : i0 + SUM_CHUNK_ROWS].astype(np.float64) * f - mean
            G += chunk.T @ chunk
        return torch.from_numpy(G)
    mean = x.sum(dim=0, dtype=torch.float64) * (f / n) if centred else 0.0
    G = torch.zeros(d, d, dtype=torch.float64, device=x.device)
    for i0 in range(0, n, SUM_CHUNK_ROWS):
        chunk = x[i0 : i0 + SUM_CHUNK_ROWS].to(torch.float64) * f - mean
        G.addmm_(chunk.T, chunk)
    return G


def descending_eigenvalues(G: torch.Tensor, size: int) -> torch.Tensor:
    """The eigenvalues of a symmetric scatter ``G`` of points whose larger side (n or d) is ``size``, descending, those
    within the eigensolver's rounding of 0 set to 0."""
    ev = torch.linalg.eigvalsh(G).flip(0)
    # Within the eigensolver's rounding of 0 (LAPACK's rank tolerance, max(n, d)·eps·λ_max) is 0: a direction the
    # points lack (a centred cloud's last one) otherwise comes back as a singular value of about √eps·σ_max, which
    # moves the effective rank by ~1e-8 relative, differently on each CPU's kernels.
    tol = size * torch.finfo(G.dtype).eps * ev[0].clamp(min=0.0)
    return torch.where(ev > tol, ev, torch.zeros_like(ev))


def participation_ratio(X: ArrayLike) -> float:
    r"""Participation ratio of the covariance, :math:`(\sum\lambda)^2/\sum\lambda^2 = \mathrm{tr}(C)^2/\lVert
    C\rVert_F^2`: about how many directions carry the variance (1 to d).

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).

    Returns
    -------
    float
        In [1, min(n − 1, dim)]; :func:`isoflow.metrics.isoscore` is (PR − 1)/(dim − 1).

    References
    ----------
    P. Gao, E. Trautmann, B. Yu et al. *A theory of multineuronal dimensionality, dynamics and measurement*. bioRxiv
    2017 (the participation ratio of a covariance).

    Examples
    --------
    >>> import torch
    >>> round(participation_ratio(torch.tensor([[1., 0.], [-1., 0.], [0., 2.], [0., -2.]])), 4)  # variances 1 and 4
    1.4706
    """
    return float(_participation_ratio(covariance(X)))


def effective_rank(X: ArrayLike, *, centred: bool = False) -> float:
    r"""Effective rank (Roy & Vetterli 2007; RankMe, Garrido et al. 2023): :math:`\exp(-\sum_k p_k\log p_k)`,
    :math:`p_k = \sigma_k/\sum_j\sigma_j` over the singular values of X (the entropy's exponential; 0·log 0 = 0).
    RankMe adds 1e-7 to each :math:`p_k`; this is the exact value. A singular value within the eigensolver's rounding
    of 0 (:math:`\sigma_k^2 \le \max(n, d)\,\epsilon\,\sigma_1^2`, float64's ε) counts as 0.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    centred : bool
        Of the centred points (the covariance's directions) instead of the points as they are (RankMe's, the
        default: a common offset counts as a direction).

    Returns
    -------
    float
        In [1, min(n, dim)]; r for a rank-r matrix whose non-zero singular values are equal.

    References
    ----------
    O. Roy, M. Vetterli. *The effective rank*. EUSIPCO 2007. Q. Garrido et al. *RankMe*. ICML 2023.

    Examples
    --------
    >>> import torch
    >>> round(effective_rank(torch.eye(3)), 6), round(effective_rank(torch.tensor([[3., 0.], [0., 1.]])), 4)
    (3.0, 1.7548)
    """
    return _effective_rank_of(_eigenvalues(X, centred))


def _effective_rank_of(ev: torch.Tensor) -> float:
    s = ev.sqrt()
    p = s / s.sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def variance_effective_rank(X: ArrayLike) -> float:
    r"""Effective rank of the explained variance: :math:`\exp(-\sum_k p_k\log p_k)`, :math:`p_k = \lambda_k/\sum_j
    \lambda_j` over the eigenvalues of the points' covariance (centred; :math:`\lambda_k \propto \sigma_k(X_c)^2`).
    RankMe in the convention of Li et al. (2025) and the α-ReQ code of the same lab, which take the entropy of PCA's
    explained-variance ratios (adding 1e-7 to each; this is the exact value); :func:`effective_rank` takes it over
    :math:`\sigma_k`, as Garrido et al. define RankMe. The two agree on a spectrum of equal values (both r for r equal
    directions) and differ everywhere else: squaring the spectrum sharpens it, so this one is the smaller.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).

    Returns
    -------
    float
        In [1, min(n − 1, dim)].

    References
    ----------
    M. Z. Li et al. *Tracing the representation geometry of language models from pretraining to post-training*.
    NeurIPS 2025. O. Roy, M. Vetterli. *The effective rank*. EUSIPCO 2007.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[3., 0.], [-3., 0.], [0., 1.], [0., -1.]])   # variances 9:1 (σ 3:1)
    >>> round(variance_effective_rank(x), 4), round(effective_rank(x, centred=True), 4)
    (1.3841, 1.7548)
    """
    return _effective_rank_of(_eigenvalues(X, True) ** 2)


def stable_rank(X: ArrayLike, *, centred: bool = False) -> float:
    r"""Stable rank :math:`\lVert X\rVert_F^2/\lVert X\rVert_2^2 = \sum_k\sigma_k^2/\sigma_1^2`: the rank, discounted
    for directions much weaker than the strongest.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    centred : bool
        Of the centred points instead of the points as they are (default).

    Returns
    -------
    float
        In [1, rank(X)].

    References
    ----------
    M. Rudelson, R. Vershynin. *Sampling from large matrices: an approach through geometric functional analysis*.
    J. ACM 54, 2007.

    Examples
    --------
    >>> import torch
    >>> stable_rank(torch.tensor([[3., 0., 0.], [0., 1., 0.], [0., 0., 1.]]))  # (9 + 1 + 1) / 9
    1.2222222222222223
    """
    return _stable_rank_of(_eigenvalues(X, centred))


def _stable_rank_of(ev: torch.Tensor) -> float:
    return float(ev.sum() / ev[0])


def spectrum_sizes(X: ArrayLike) -> dict[str, float]:
    """:func:`effective_rank`, :func:`participation_ratio` and :func:`stable_rank` of the same points (the ranks of
    the points as they are, the ratio of their covariance), the two ranks from one eigendecomposition: what a
    per-layer table records.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).

    Returns
    -------
    dict
        ``effective_rank``, ``participation_ratio``, ``stable_rank``: each what its own function returns.

    Examples
    --------
    >>> import torch
    >>> {k: round(v, 4) for k, v in spectrum_sizes(torch.tensor([[3., 0.], [0., 1.]])).items()}
    {'effective_rank': 1.7548, 'participation_ratio': 1.0, 'stable_rank': 1.1111}
    """
    ev = _eigenvalues(X, centred=False)
    return {
        "effective_rank": _effective_rank_of(ev),
        "participation_ratio": participation_ratio(X),
        "stable_rank": _stable_rank_of(ev),
    }


def alpha_req(X: ArrayLike, *, first: int = 1, last: int | None = None, weighted: bool = False) -> float:
    r"""α-ReQ (Agrawal et al. 2022): the decay :math:`\alpha` of the covariance's eigenspectrum,
    :math:`\lambda_k \propto k^{-\alpha}`, fitted by least squares to :math:`(\log k, \log\lambda_k)` for
    k = ``first`` .. ``last`` (1-based, descending eigenvalues); ``weighted``: each k weighted by :math:`1/k`
    (Stringer et al. 2019's fit, which Li et al. 2025 use over k = 12..100, :data:`LI_ALPHA_RANGE`), so that the many
    small eigenvalues of a long range do not outweigh the few large ones.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    first, last : int
        The fitted range of k; ``last`` None: the covariance's numerical rank (eigenvalues above 1e-12 of the
        largest, at most min(n − 1, dim)), the whole spectrum the points have.
    weighted : bool
        Each k weighted by 1/k (Stringer et al. 2019's fit; Li et al. 2025 over k = 12..100); default unweighted.

    Returns
    -------
    float
        α; larger: faster decay, fewer directions.

    References
    ----------
    K. K. Agrawal et al. *α-ReQ: Assessing representation quality in self-supervised learning by measuring
    eigenspectrum decay*. NeurIPS 2022. C. Stringer et al. *High-dimensional geometry of population responses in
    visual cortex*. Nature 571, 2019. M. Z. Li et al. *Tracing the representation geometry of language models from
    pretraining to post-training*. NeurIPS 2025.

    Examples
    --------
    >>> import torch
    >>> Q, _ = torch.linalg.qr(torch.randn(64, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
    >>> Q = Q - Q.mean(0)
    >>> Q, _ = torch.linalg.qr(Q)  # orthonormal, centred columns
    >>> k = torch.arange(1, 9, dtype=torch.float64)
    >>> round(alpha_req(Q * k ** -0.75), 6)  # variances k^-1.5: standard deviations k^-0.75
    1.5
    >>> round(alpha_req(Q * k ** -0.75, first=2, last=8, weighted=True), 6)  # an exact power law: any weights
    1.5
    """
    return _alpha_of(_eigenvalues(X, centred=True), first, last, weighted)


def _alpha_of(ev: torch.Tensor, first: int = 1, last: int | None = None, weighted: bool = False) -> float:
    """:func:`alpha_req` of the covariance's eigenvalues ``ev`` (descending)."""
    rank = int((ev > ev[0] * 1e-12).sum())
    last = rank if last is None else last
    if not 1 <= first < last <= rank:
        raise ValueError(f"alpha_req fits k = first..last within 1..{rank} (the numerical rank); got {first}..{last}")
    k = torch.arange(first, last + 1, dtype=torch.float64, device=ev.device)
    x, y = k.log(), ev[first - 1 : last].log()
    if weighted:  # weighted least squares: the weighted means, then the weighted slope
        w = 1.0 / k
        x, y = x - (w * x).sum() / w.sum(), y - (w * y).sum() / w.sum()
        return float(-(w * x * y).sum() / (w * x * x).sum())
    x = x - x.mean()
    return float(-(x * (y - y.mean())).sum() / (x * x).sum())


def covariance_spectrum_sizes(X: ArrayLike) -> dict[str, float]:
    """:func:`variance_effective_rank`, :func:`alpha_req` over the whole numerical rank and over Li et al.'s ranks
    (:data:`LI_ALPHA_RANGE`, weighted) of the same points from one eigendecomposition of their covariance, each α NaN
    where the covariance has no such range to fit (numerical rank below 2, or below 100): what a per-layer table
    records beside :func:`spectrum_sizes`.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).

    Returns
    -------
    dict
        ``variance_effective_rank``, ``alpha_req``, ``alpha_req_li``: each what its function returns.

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[3., 0.], [-3., 0.], [0., 1.], [0., -1.]])
    >>> {k: round(v, 4) for k, v in covariance_spectrum_sizes(x).items()}  # α: log 9 / log 2 over k = 1, 2
    {'variance_effective_rank': 1.3841, 'alpha_req': 3.1699, 'alpha_req_li': nan}
    """
    return covariance_sizes_of(_eigenvalues(X, centred=True))


def covariance_sizes_of(ev: torch.Tensor) -> dict[str, float]:
    """:func:`covariance_spectrum_sizes` from the covariance's eigenvalues ``ev`` (descending, any common scale)."""

    def alpha(*fit) -> float:
        try:
            return _alpha_of(ev, *fit)
        except ValueError:  # a covariance whose numerical rank is below the range has no decay there to fit
            return float("nan")

    return {
        "variance_effective_rank": _effective_rank_of(ev**2),
        "alpha_req": alpha(),
        "alpha_req_li": alpha(*LI_ALPHA_RANGE, True),
    }


def uniformity(X: ArrayLike, t: float = 2.0) -> float:
    r"""Uniformity (Wang & Isola 2020): :math:`\log \frac{1}{\binom n2}\sum_{i<j} e^{-t\lVert u_i-u_j\rVert^2}` of the
    L2-normalised points :math:`u_i`, over every pair, exactly, in blocks (log-sum-exp).

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it); no zero rows.
    t : float
        The Gaussian potential's scale (> 0); 2, as Wang & Isola.

    Returns
    -------
    float
        In [−4t, 0]: lower is more uniform; 0 when every point has one direction.

    References
    ----------
    T. Wang, P. Isola. *Understanding contrastive representation learning through alignment and uniformity on the
    hypersphere*. ICML 2020.

    Examples
    --------
    >>> import torch
    >>> round(uniformity(torch.tensor([[1., 0.], [-1., 0.]])), 4)  # one pair, at distance 2: -2·4
    -8.0
    """
    if not t > 0:
        raise ValueError(f"t must be > 0; got {t}")
    u = _unit_rows(as_points(X)).to(torch.float64)
    n = u.shape[0]
    logs = []
    for i0 in range(0, n, UNIFORMITY_BLOCK):
        a = u[i0 : i0 + UNIFORMITY_BLOCK]
        for j0 in range(i0, n, UNIFORMITY_BLOCK):
            b = u[j0 : j0 + UNIFORMITY_BLOCK]
            sq = (2.0 - 2.0 * (a @ b.T)).clamp(min=0.0)  # ‖u_i − u_j‖² of unit rows
            if j0 == i0:  # the pairs i < j only
                sq = sq[torch.triu(torch.ones_like(sq, dtype=torch.bool), diagonal=1)]
            logs.append(torch.logsumexp((-t * sq).reshape(-1), dim=0))
    return float(torch.logsumexp(torch.stack(logs), dim=0) - math.log(n * (n - 1) / 2))


def alignment(X: ArrayLike, Y: ArrayLike, alpha: float = 2.0) -> float:
    r"""Alignment (Wang & Isola 2020): :math:`\frac1n\sum_i\lVert u_i - v_i\rVert^\alpha` of the L2-normalised rows
    of ``X`` and ``Y``, row i of both a positive pair (a pair task's two sides, two views of one example).

    Parameters
    ----------
    X, Y : (n_points, dim) tensors or arrays
        The pairs' two sides, row by row (the same device).
    alpha : float
        The distance's power (> 0); 2, as Wang & Isola.

    Returns
    -------
    float
        In [0, 2^alpha]: lower, the pairs closer.

    References
    ----------
    T. Wang, P. Isola. ICML 2020 (see :func:`uniformity`).

    Examples
    --------
    >>> import torch
    >>> alignment(torch.tensor([[1., 0.], [0., 1.]]), torch.tensor([[1., 0.], [0., -1.]]))  # distances 0 and 2
    2.0
    """
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0; got {alpha}")
    u, v = _unit_rows(as_points(X)).to(torch.float64), _unit_rows(as_points(Y, name="Y")).to(torch.float64)
    if u.shape != v.shape:
        raise ValueError(f"X and Y must be pairs row by row; got shapes {tuple(u.shape)} and {tuple(v.shape)}")
    return float((u - v).norm(dim=1).pow(alpha).mean())
