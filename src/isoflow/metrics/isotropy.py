"""Global isotropy measures: IsoScore, IsoScore*, cosine anisotropy, Cai et al.'s S_inter / S_intra.

All functions take a ``(n_points, dim)`` tensor or array and compute on the
input's device. Reductions run in float64 whatever the input dtype (the IsoScores of float32 input: centred and
multiplied in float32, 1,024 rows at a time, the products added up in float64: :func:`_scatter_matrix`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ._validate import (
    SUM_CHUNK_ROWS,
    ArrayLike,
    as_points,
    centred_rescaled_numpy,
    encode_labels,
    power_of_two_factor,
    rescaled,
)
from .device_policy import numpy_blas


def covariance(X: ArrayLike) -> torch.Tensor:
    """Sample covariance ``C = Xcᵀ Xc / (n - 1)`` (``Xc`` = centred rows), float64, shape (dim, dim).

    Use it to estimate the shrinkage target ``C0`` of :func:`isoscore_star`
    on a large set of points (e.g. the whole training set).
    """
    x = as_points(X).to(torch.float64)
    xc = x - x.mean(dim=0, keepdim=True)
    return xc.T @ xc / (x.shape[0] - 1)


def _participation_ratio(C: torch.Tensor) -> torch.Tensor:
    # (Σλ)² / Σλ² = tr(C)² / ‖C‖_F² for a symmetric PSD C: no eigendecomposition needed.
    if numpy_blas(C):  # after NumPy's products, in NumPy (torch's threads would fight OpenBLAS's: device_policy.py)
        a = C.numpy()
        return torch.tensor(np.trace(a) ** 2 / np.vdot(a, a), dtype=C.dtype)
    return torch.trace(C) ** 2 / (C * C).sum()


def _isoscore_from_pr(pr: torch.Tensor, dim: int) -> torch.Tensor:
    return (pr - 1.0) / (dim - 1)


def covariance_tensor(X: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Sample covariance in ``dtype``, differentiable, without input checks (see :func:`covariance`)."""
    x = X.to(dtype)
    xc = x - x.mean(dim=0, keepdim=True)
    return xc.T @ xc / (x.shape[0] - 1)


def isoscore_of_covariance(C: torch.Tensor, C0: torch.Tensor | None = None, zeta: float = 0.0) -> torch.Tensor:
    """IsoScore* of a covariance: the closed form on C_ζ = (1 − ζ)·C + ζ·C0 (IsoScore when ζ = 0). Differentiable."""
    if zeta:
        C = (1.0 - zeta) * C + zeta * C0.to(C.dtype)
    return _isoscore_from_pr(_participation_ratio(C), C.shape[0])


def isoscore_star_tensor(
    X: torch.Tensor, C0: torch.Tensor | None, zeta: float, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """IsoScore* of a point cloud as a 0-d tensor, differentiable, without input checks (see :func:`isoscore_star`).

    ``dtype`` is that of the covariance (float64 for measurement; float32 halves the cost of a training penalty)."""
    return isoscore_of_covariance(covariance_tensor(X, dtype), C0, zeta)


def _centred_rescaled(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(centred copy of X times a power of two f, f): float32 for float32 input, float64 otherwise. Exact centring
    (XᵀX − nμμᵀ would cancel catastrophically far from the origin), after an exact rescaling (squares of 1e200
    overflow even in float64). Centring float32 input in float32 rounds each centred value once, as casting an
    exactly centred float64 copy to float32 would; what is left of the mean (~10 ulps of it per column) changes
    the covariance by its square, below float32's own rounding of the input."""
    x = X if X.dtype == torch.float32 else X.to(torch.float64)
    if numpy_blas(x):  # in NumPy, as the products that follow (device_policy.py); the same steps
        xc = np.empty(tuple(x.shape), dtype=x.numpy().dtype)
        e = centred_rescaled_numpy(x.numpy(), out=xc)
        return torch.from_numpy(xc), torch.tensor(2.0**-e, dtype=x.dtype)
    f = power_of_two_factor(x)
    xc = x * f
    xc -= xc.mean(dim=0, keepdim=True)
    return xc, f


BATCHED_SCATTER_VALUES = 2**24  # float32 values (64 MiB) of the chunk products _scatter_matrix holds at once


def _scatter_matrix(xc: torch.Tensor) -> torch.Tensor:
    """xcᵀ·xc as float64. A float32 ``xc`` is multiplied in float32 (twice float64's GEMM rate) in 1,024-row chunks
    whose products add up in float64: each chunk's sum rounds in float32 over at most 1,024 terms, so IsoScore stays
    within ~1e-7 of the all-float64 value, below the effect of the input's own float32 rounding. Differentiable; in
    NumPy outside autograd on a host whose CPU BLAS is NumPy's (the silhouette's products are there too:
    device_policy.py)."""
    if xc.dtype != torch.float32:
        return torch.from_numpy(xc.numpy().T @ xc.numpy()) if numpy_blas(xc) else xc.T @ xc
    if numpy_blas(xc):
        x = xc.numpy()
        G = np.zeros((x.shape[1], x.shape[1]))
        for i0 in range(0, x.shape[0], SUM_CHUNK_ROWS):
            chunk = x[i0 : i0 + SUM_CHUNK_ROWS]
            G += chunk.T @ chunk
        return torch.from_numpy(G)
    # The chunks' products as batched products (zero rows pad the last chunk: they add nothing), a group of chunks at a
    # time: a handful of kernel launches instead of four a chunk (on a GPU the launches, not the products, took the
    # time), the (chunks, d, d) buffer held to BATCHED_SCATTER_VALUES.
    n, d = xc.shape
    chunks = -(-n // SUM_CHUNK_ROWS)
    x = torch.nn.functional.pad(xc, (0, 0, 0, chunks * SUM_CHUNK_ROWS - n)).view(chunks, SUM_CHUNK_ROWS, d)
    group = max(1, BATCHED_SCATTER_VALUES // (d * d))
    G = None
    for c0 in range(0, chunks, group):
        part = x[c0 : c0 + group]
        products = torch.bmm(part.transpose(1, 2), part).sum(dim=0, dtype=torch.float64)
        G = products if G is None else G + products
    return G


def _gram_or_scatter(xc: torch.Tensor) -> torch.Tensor:
    """The smaller of xc·xcᵀ and xcᵀ·xc (the same non-zero eigenvalues), float64; the Gram matrix (n < dim) from a
    float64 copy: a rare, small case not worth a chunked product."""
    n, d = xc.shape
    if n < d:
        x64 = xc.to(torch.float64)
        return x64 @ x64.T
    return _scatter_matrix(xc)


def isoscore_tensor(X: torch.Tensor) -> torch.Tensor:
    """IsoScore as a 0-d float64 tensor, without input checks or host syncs.

    For tight loops that already validated their input (see :func:`isoscore`).
    Differentiable. Uses the Gram matrix when ``n < dim`` (same non-zero
    eigenvalues, cheaper).
    """
    xc, _ = _centred_rescaled(X)
    # Scale does not matter (the ratio is scale-free), so skip the 1/(n-1).
    return _isoscore_from_pr(_participation_ratio(_gram_or_scatter(xc)), xc.shape[1])


def isoscore_and_star_tensor(
    X: torch.Tensor, C0: torch.Tensor | None, zeta: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(IsoScore, IsoScore*_ζ, covariance C) of ``X`` from one covariance product, float64, no checks, no host sync.

    The IsoScore is computed exactly as :func:`isoscore_tensor` computes it (same value, bit for bit, when
    n ≥ dim); IsoScore* is the closed form on (1 − ζ)·C + ζ·C0 with the same C, unscaled back to a covariance."""
    xc, f = _centred_rescaled(X)
    n, d = xc.shape
    G = _scatter_matrix(xc)
    iso = _isoscore_from_pr(_participation_ratio(_gram_or_scatter(xc) if n < d else G), d)
    f = f.to(torch.float64)
    C = G / ((n - 1) * f * f)  # f is a power of two: the unscaling is exact
    return iso, (isoscore_of_covariance(C, C0, zeta) if zeta else iso), C


def isoscore(X: ArrayLike) -> float:
    r"""IsoScore of a point cloud (Rudman, Gillman, Rayne & Eickhoff, 2022).

    With :math:`\lambda` the eigenvalues of the covariance :math:`C` of ``X``
    (the variances along the principal components), the paper's steps

    1. :math:`\hat\Sigma = \sqrt{d}\,\lambda / \lVert\lambda\rVert_2`
    2. :math:`\delta = \lVert\hat\Sigma - \mathbf 1\rVert_2 / \sqrt{2(d-\sqrt d)}`
    3. :math:`\phi = (d - \delta^2(d-\sqrt d))^2 / d^2`
    4. :math:`\iota = (d\phi - 1)/(d - 1)`

    collapse to :math:`\iota = \left(\operatorname{tr}(C)^2/\lVert C\rVert_F^2 - 1\right)/(d-1)`,
    i.e. (participation ratio − 1)/(d − 1), which is what is computed here (float64,
    no eigendecomposition). 1 means isotropic; 0 means all variance along one
    direction; points spread uniformly over k of d dimensions score (k−1)/(d−1).

    When ``n <= d`` the covariance has rank at most ``n - 1`` and IsoScore is
    still defined through its eigenvalues (zeros included), so it is at most
    (n − 2)/(d − 1); like the ``IsoScore`` package, no error is raised.
    IsoScore depends strongly on n: compare values only at equal sample size.

    Parameters
    ----------
    X : (n_points, dim) tensor or array, n_points >= 2, dim >= 2

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        NaN/inf values, wrong rank, fewer than 2 points, dim < 2, or all points
        identical (zero covariance: IsoScore is 0/0; the ``IsoScore`` package returns nan).

    References
    ----------
    W. Rudman, N. Gillman, T. Rayne, C. Eickhoff. *IsoScore: Measuring the
    Uniformity of Embedding Space Utilization*. Findings of ACL 2022.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import isoscore
    >>> round(isoscore(torch.tensor([[1., 0.], [-1., 0.], [0., 1.], [0., -1.]])), 6)  # the same variance both ways
    1.0
    >>> round(isoscore(torch.tensor([[1., 0.], [-1., 0.], [2., 0.]])), 6)  # all of it along one direction
    0.0"""
    x = as_points(X)
    _check_dim(x)
    score = isoscore_tensor(x)
    if not torch.isfinite(score):
        raise ValueError("IsoScore is undefined: all points are identical (zero covariance)")
    return float(score)


def _check_dim(x: torch.Tensor) -> None:
    if x.shape[1] < 2:
        raise ValueError(f"IsoScore needs dim >= 2 (it divides by dim - 1); got dim = {x.shape[1]}")


def isoscore_star(X: ArrayLike, C0: ArrayLike | None = None, zeta: float = 0.0) -> torch.Tensor:
    r"""IsoScore* with covariance shrinkage (Rudman & Eickhoff, ICLR 2024); differentiable.

    The covariance :math:`C` of the (mini-)batch ``X`` is shrunk towards a
    covariance :math:`C_0` estimated on many more points,
    :math:`C_\zeta = (1-\zeta)\,C + \zeta\,C_0`, and the IsoScore steps are applied
    to the eigenvalues of :math:`C_\zeta`:
    :math:`\iota^* = (\operatorname{tr}(C_\zeta)^2/\lVert C_\zeta\rVert_F^2 - 1)/(d-1)`
    (the same closed form as :func:`isoscore`; equal to it at ``zeta = 0``).
    The closed form has a smooth gradient even where eigenvalues repeat,
    unlike ``eigvalsh``/``svdvals``-based implementations.

    The I-STAR loss is ``task_loss + lam * (1 - isoscore_star(...))``.

    Parameters
    ----------
    X : (n_points, dim) tensor (gradients flow through it) or array
    C0 : (dim, dim) symmetric PSD tensor/array, e.g. :func:`covariance` of the
        training set, or the identity when nothing larger is available.
        Required when ``zeta > 0``.
    zeta : shrinkage weight in [0, 1]; I-STAR's default is 0.2.

    Returns
    -------
    0-d float64 tensor on ``X``'s device (call ``float()`` for a number).

    References
    ----------
    W. Rudman, C. Eickhoff. *Stable Anisotropic Regularization*. ICLR 2024.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import isoscore_star
    >>> X = torch.tensor([[0., 0., 0.], [1., 0., 0.], [2., 0., 0.], [3., 0.1, 0.]])  # nearly a line: IsoScore ~ 0
    >>> round(float(isoscore_star(X)), 4)  # zeta = 0: plain IsoScore
    0.0006
    >>> round(float(isoscore_star(X, torch.eye(3), zeta=0.5)), 4)  # half-way to an isotropic target
    0.6951
    """
    x = as_points(X)
    _check_dim(x)
    c0 = check_shrinkage(C0, x.shape[1], zeta, device=x.device)
    score = isoscore_star_tensor(x, c0, zeta)
    if not torch.isfinite(score):
        raise ValueError(
            "IsoScore* is undefined: the shrunk covariance is zero (identical points and zeta = 0 or C0 = 0)"
        )
    return score


def check_shrinkage(C0: ArrayLike | None, dim: int, zeta: float, *, device=None) -> torch.Tensor | None:
    """``C0`` as a float64 (dim, dim) tensor on ``device``, checked (shape, finite, symmetric PSD); None if unused."""
    if isinstance(zeta, bool) or not isinstance(zeta, (int, float)) or not 0.0 <= zeta <= 1.0:
        raise ValueError(f"zeta must be a number in [0, 1]; got {zeta!r}")
    if zeta == 0.0:
        return None
    if C0 is None:
        raise ValueError("zeta > 0 needs a shrinkage covariance C0 (e.g. isoflow.metrics.covariance(train_X))")
    c0 = torch.as_tensor(C0, device=device).to(torch.float64)
    if c0.shape != (dim, dim):
        raise ValueError(f"C0 must have shape ({dim}, {dim}) to match the points' dim; got {tuple(c0.shape)}")
    if not torch.isfinite(c0).all():
        raise ValueError("C0 contains NaN/inf values")
    if not torch.allclose(c0, c0.T, rtol=1e-6, atol=1e-12 * float(c0.abs().max())):
        raise ValueError("C0 must be symmetric (a covariance matrix)")
    return c0


def _unit_rows(x: torch.Tensor, name: str = "X") -> torch.Tensor:
    x64 = rescaled(x.to(torch.float64))  # cosines are scale-free; the norms of 1e200 would overflow
    norms = torch.linalg.vector_norm(x64, dim=1, keepdim=True)
    zero = norms.squeeze(1) == 0
    if bool(zero.any()):
        first = int(torch.nonzero(zero)[0])
        raise ValueError(
            f"{name} has {int(zero.sum())} all-zero row(s) (first: {first}); cosine similarity is undefined for them"
        )
    return x64 / norms


def cosine_anisotropy(X: ArrayLike, n_pairs: int | None = None, seed: int = 0) -> float:
    r"""Mean cosine similarity between distinct points (anisotropy baseline; Ethayarajh 2019).

    Exact (``n_pairs=None``): with unit rows :math:`u_i` and :math:`s=\sum_i u_i`,
    :math:`\frac{1}{n(n-1)}\sum_{i\ne j} u_i\cdot u_j = \frac{\lVert s\rVert^2 - n}{n(n-1)}`,
    in O(n·d) time and memory. Sampled (``n_pairs=m``): mean cosine of ``m``
    uniformly drawn pairs ``i != j`` (seeded), the estimate used by most papers.
    Near 1: all vectors point the same way (anisotropic); near 0: no common direction.

    Raises ``ValueError`` for an all-zero row (cosine undefined).

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    n_pairs : int or None
        None: the exact mean over every distinct pair; m: the mean over m pairs drawn uniformly.
    seed : int
        The draw's seed (``n_pairs`` given).

    Returns
    -------
    float
        The mean cosine, in [-1/(n-1), 1].

    References
    ----------
    K. Ethayarajh. *How Contextual are Contextualized Word Representations? Comparing the Geometry of BERT, ELMo,
    and GPT-2 Embeddings*. EMNLP 2019.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import cosine_anisotropy
    >>> round(cosine_anisotropy(torch.tensor([[1., 0.], [0., 1.], [1., 1.]])), 4)  # pairs: 0, 0.7071, 0.7071
    0.4714"""
    x = as_points(X)
    u = _unit_rows(x)
    n = u.shape[0]
    if n_pairs is None:
        s = u.sum(dim=0)
        return float(((s @ s) - n) / (n * (n - 1)))
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be a positive integer or None; got {n_pairs}")
    g = torch.Generator(device="cpu").manual_seed(seed)
    i = torch.randint(0, n, (n_pairs,), generator=g)
    # Shift j by 1..n-1 so that j != i while staying uniform over the other points.
    j = (i + torch.randint(1, n, (n_pairs,), generator=g)) % n
    i, j = i.to(u.device), j.to(u.device)
    return float((u[i] * u[j]).sum(dim=1).mean())


def _type_means(x: torch.Tensor, types: ArrayLike) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    clusters = encode_labels(types, x.shape[0], device=x.device)
    u = _unit_rows(x)
    sums = torch.zeros(clusters.k, u.shape[1], dtype=torch.float64, device=u.device)
    sums.index_add_(0, clusters.codes, u)
    return u, sums, clusters.sizes.to(torch.float64)


def s_inter(X: ArrayLike, types: ArrayLike) -> float:
    r"""Cai et al.'s inter-type similarity :math:`S_{inter}`: mean cosine between embeddings of different types.

    ``types[i]`` names the type (e.g. the word) of row ``i``; a type may have
    several instances (contextual embeddings). Cai et al. draw one instance per
    type and average the cosines between types; this returns that quantity's
    exact expectation over the draw:
    :math:`\frac{1}{T(T-1)}\sum_{t\ne t'} m_t\cdot m_{t'}` with :math:`m_t` the mean
    unit vector of type *t*, computed as :math:`(\lVert\sum_t m_t\rVert^2-\sum_t\lVert m_t\rVert^2)/(T(T-1))`.
    Needs at least two types.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    types : sequence of length n_points
        The type of each row (any hashable values).

    Returns
    -------
    float
        The mean cosine between the mean unit vectors of different types.

    References
    ----------
    X. Cai, J. Huang, Y. Bian, K. Church. *Isotropy in the Contextual Embedding
    Space: Clusters and Manifolds*. ICLR 2021.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import s_inter
    >>> X = torch.tensor([[1., 0.], [1., 0.1], [0., 1.], [0.1, 1.]])
    >>> round(s_inter(X, ["a", "a", "b", "b"]), 4)  # two nearly orthogonal types
    0.0993
    """
    x = as_points(X)
    _, sums, sizes = _type_means(x, types)
    T = sums.shape[0]
    if T < 2:
        raise ValueError("S_inter needs at least two distinct types")
    return s_inter_of_sums(sums, sizes)


def s_inter_of_sums(sums: torch.Tensor, sizes: torch.Tensor) -> float:
    """:func:`s_inter` from the types' sums of unit rows (T × d, float64) and their sizes (T ≥ 2)."""
    T = sums.shape[0]
    m = sums / sizes[:, None]
    total = m.sum(dim=0)
    return float(((total @ total) - (m * m).sum()) / (T * (T - 1)))


def s_inter_by_type_count(
    X: ArrayLike, types: ArrayLike, n_types: Sequence[int], frequency: ArrayLike | None = None
) -> list[float]:
    r""":func:`s_inter` over the ``n`` most frequent types only, for each ``n`` in ``n_types``: S_inter moves with the
    rarer types a sample takes in, up or down by model and layer (on SmolLM2's input embeddings 0.16 over ~1,100
    types, 0.32 over ~12,000; on GloVe's it falls), so numbers over different counts of types do not compare; this
    curve, and a comparison read at one ``n``, do.

    Types are ranked by ``frequency`` (descending; ties in the order of the types' sorted values) and S_inter is
    :math:`(\lVert\sum_{t\le n} m_t\rVert^2-\sum_{t\le n}\lVert m_t\rVert^2)/(n(n-1))` over the first ``n``
    (:math:`m_t`: type t's mean unit vector, as :func:`s_inter`), all sizes from one pass over the types.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    types : sequence of length n_points
        The type of each row (any hashable values).
    n_types : sequence of int
        The numbers of types, each in 2..T (T: the distinct types).
    frequency : sequence of length n_points, optional
        Each row's type frequency (e.g. the type's count in a corpus, for one point per type); default: the type's
        instances among the rows. A type's largest value is its rank key.

    Returns
    -------
    list of float
        S_inter over the ``n`` most frequent types, in the order of ``n_types``.

    References
    ----------
    X. Cai, J. Huang, Y. Bian, K. Church. ICLR 2021 (see :func:`s_inter`).

    Examples
    --------
    >>> import torch
    >>> X = torch.tensor([[1., 0.], [1., 0.], [1., 0.], [0.8, 0.6], [0.8, 0.6], [0., 1.]])
    >>> [round(v, 4) for v in s_inter_by_type_count(X, ["a", "a", "a", "b", "b", "c"], [2, 3])]
    [0.8, 0.4667]

    (a·b = 0.8 over the two most frequent; with c: (0.8 + 0 + 0.6) / 3.)
    """
    x = as_points(X)
    clusters = encode_labels(types, x.shape[0], device=x.device)
    T = clusters.k
    wanted = [int(n) for n in n_types]
    bad = [n for n in wanted if not 2 <= n <= T]
    if bad:
        raise ValueError(f"n_types must each be in 2..{T} (the distinct types); got {bad}")
    _, sums, sizes = _type_means(x, clusters)
    if frequency is None:
        key = sizes
    else:
        f = torch.as_tensor(np.asarray(frequency, dtype=np.float64), device=x.device)
        if f.shape != (x.shape[0],):
            raise ValueError(f"frequency must give one number per row ({x.shape[0]}); got shape {tuple(f.shape)}")
        key = torch.full((T,), -torch.inf, dtype=torch.float64, device=x.device)
        key = key.scatter_reduce(0, clusters.codes, f, reduce="amax")
    return s_inter_curve_of_sums(sums, sizes, key, wanted)


def s_inter_curve_of_sums(sums: torch.Tensor, sizes: torch.Tensor, key: torch.Tensor, wanted: list[int]) -> list[float]:
    """:func:`s_inter_by_type_count` from the types' sums of unit rows (T × d, float64), their sizes and rank keys
    (descending; ties in the order of the rows): what a run that streams its points keeps instead of them
    (:mod:`isoflow.layers.streamed`)."""
    order = torch.sort(-key, stable=True).indices
    m = (sums / sizes[:, None])[order]
    total = torch.zeros(m.shape[1], dtype=torch.float64, device=sums.device)
    squares, done, found = 0.0, 0, {}
    for n in sorted(set(wanted)):  # running sums from one size to the next
        block = m[done:n]
        total = total + block.sum(dim=0)
        squares += float((block * block).sum())
        done = n
        found[n] = float(((total @ total) - squares) / (n * (n - 1)))
    return [found[n] for n in wanted]


def s_intra(X: ArrayLike, types: ArrayLike) -> float:
    r"""Cai et al.'s intra-type similarity :math:`S_{intra}`: mean over types of the mean cosine between instances of a
    type.

    For a type with unit rows :math:`u_1..u_m` (m >= 2) the mean pairwise cosine
    is :math:`(\lVert\sum u\rVert^2 - m)/(m(m-1))`; types with one instance have
    no pair and are skipped. Raises ``ValueError`` if no type has two instances.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    types : sequence of length n_points
        The type of each row (any hashable values).

    Returns
    -------
    float
        The mean over types with at least two instances of their instances' mean pairwise cosine.

    References
    ----------
    X. Cai, J. Huang, Y. Bian, K. Church. *Isotropy in the Contextual Embedding
    Space: Clusters and Manifolds*. ICLR 2021.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import s_intra
    >>> X = torch.tensor([[1., 0.], [1., 0.1], [0., 1.], [0.1, 1.]])
    >>> round(s_intra(X, ["a", "a", "b", "b"]), 4)  # the instances of each type nearly parallel
    0.995
    """
    x = as_points(X)
    _, sums, sizes = _type_means(x, types)
    keep = sizes >= 2
    if not bool(keep.any()):
        raise ValueError("S_intra needs at least one type with two or more instances")
    sq = (sums[keep] * sums[keep]).sum(dim=1)
    m = sizes[keep]
    return float(((sq - m) / (m * (m - 1))).mean())


__all__ = [
    "check_shrinkage",
    "covariance",
    "covariance_tensor",
    "isoscore_and_star_tensor",
    "isoscore_of_covariance",
    "isoscore_star_tensor",
    "isoscore",
    "isoscore_tensor",
    "isoscore_star",
    "cosine_anisotropy",
    "s_inter",
    "s_intra",
]
