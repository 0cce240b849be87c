"""Similarity of two representations of the same points: linear CKA (Kornblith et al., ICML 2019), exact.

For X (n × d₁) and Y (n × d₂), rows the same n points, columns centred:

    CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F · ‖YᵀY‖_F)

(HSIC with linear kernels, normalised). It is 1 for Y = X·Q with Q orthogonal, unchanged by isotropic scaling, and
not invariant to a general linear map. Computed from the d × d products (O(n·d²), memory O(d²)) when the points
outnumber the dimensions, from the n × n Gram matrices otherwise; in float64 (the products of float32 input are
added up in float64, 1,024 rows at a time).

``debiased=True`` gives the debiased CKA: the unbiased HSIC estimator (Song et al., JMLR 2012) in place of the biased
one, which is far from 0 for independent clouds at small n. It needs n ≥ 4 and costs no more: Kornblith et al.'s
feature-space form, from the same products and the rows' squared norms.

References: S. Kornblith, M. Norouzi, H. Lee, G. Hinton. *Similarity of Neural Network Representations Revisited*.
ICML 2019. L. Song, A. Smola, A. Gretton, J. Bedo, K. Borgwardt. *Feature Selection via Dependence Maximization*.
JMLR 2012. M. Davari et al. *Reliability of CKA as a Similarity Measure in Deep Learning*. ICLR 2023 (its
sensitivity to a few outlier points and dimensions).
"""

from __future__ import annotations

import torch

from ._validate import SUM_CHUNK_ROWS, ArrayLike, as_points


def _paired(X: ArrayLike, Y: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = as_points(X, name="X"), as_points(Y, name="Y")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"X and Y must hold the same points (rows): got {x.shape[0]} and {y.shape[0]} rows")
    if y.device != x.device:
        y = y.to(x.device)
    return x, y


def _cross(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """aᵀb in float64, float32 inputs multiplied in their dtype SUM_CHUNK_ROWS rows at a time and summed in float64."""
    if a.dtype == torch.float64 and b.dtype == torch.float64:
        return a.T @ b
    out = torch.zeros(a.shape[1], b.shape[1], dtype=torch.float64, device=a.device)
    for i in range(0, a.shape[0], SUM_CHUNK_ROWS):
        out += (a[i : i + SUM_CHUNK_ROWS].T @ b[i : i + SUM_CHUNK_ROWS]).to(torch.float64)
    return out


class _Centring:
    """A representation and its column means, centred when called (a new tensor each time): so that many
    representations need not be held centred at once (each layer of a 16-layer, 2,048-d model on 5,000 points is
    41 MB). The same arithmetic every call: float32 (float64 input: float64) minus the float64 mean in that dtype."""

    def __init__(self, x: torch.Tensor):
        self.dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        self.x = x
        self.mean = x.to(self.dtype).to(torch.float64).mean(dim=0, keepdim=True).to(self.dtype)
        self.shape = x.shape

    def __call__(self) -> torch.Tensor:
        return self.x.to(self.dtype) - self.mean


def _debiased(cross: torch.Tensor, rows_x: torch.Tensor, rows_y: torch.Tensor, n: int) -> torch.Tensor:
    """The unbiased HSIC (Song et al. 2012) of centred X and Y, times n(n − 3), from ‖YᵀX‖²_F and the rows' squared
    norms (Kornblith et al.'s feature-space form: no n × n matrix)."""
    return cross - n / (n - 2.0) * (rows_x @ rows_y) + rows_x.sum() * rows_y.sum() / ((n - 1.0) * (n - 2.0))


def linear_cka(X: ArrayLike, Y: ArrayLike, debiased: bool = False) -> float:
    """Linear CKA of two representations of the same n points (rows), in [0, 1] (module docstring).

    Parameters
    ----------
    X, Y : (n_points, d₁) and (n_points, d₂) tensors or arrays, row i of both the same point.
    debiased : the unbiased HSIC estimator (Song et al. 2012) instead of the biased one (needs n ≥ 4).

    Returns
    -------
    float

    References
    ----------
    S. Kornblith, M. Norouzi, H. Lee, G. Hinton. *Similarity of Neural Network Representations Revisited*. ICML 2019.
    L. Song et al. *Feature Selection via Dependence Maximization*. JMLR 2012 (the unbiased HSIC).

    Examples
    --------
    >>> import torch
    >>> X = torch.randn(500, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> Q, _ = torch.linalg.qr(torch.randn(8, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
    >>> round(linear_cka(X, 3 * X @ Q), 6)                      # a rotation and a scaling: the same representation
    1.0
    >>> Z = torch.randn(500, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    >>> round(linear_cka(X, Z), 3), round(linear_cka(X, Z, debiased=True), 3)   # independent clouds
    (0.016, 0.0)
    """
    x, y = _paired(X, Y)
    return float(_cka_matrices([x], [y], (debiased,))[0][0, 0])


def linear_cka_matrix(representations, others=None, debiased: bool = False) -> torch.Tensor:
    """Linear CKA between every pair of L representations of the same n points (a model's layers: its block
    structure), as an L × L float64 tensor; or, given ``others`` (M more representations of the same points: another
    model's layers), between each of the L and each of the M, as an L × M tensor. Each representation is centred once
    and its own HSIC computed once.

    Entry (i, j) is :func:`linear_cka` of representations i and j: from their d × d cross product when the points
    outnumber every representation's dimensions, else from the n × n Gram matrices (each made once and kept: memory
    (L + M)·n², so pass a subsample of the points when n is large). Without ``others`` the diagonal is 1 and the matrix
    symmetric.

    Parameters
    ----------
    representations : sequence of L (n_points, d_l) tensors or arrays, row i of each the same point (L ≥ 1).
    others : optional sequence of M (n_points, d_m) tensors or arrays of the same points (M ≥ 1).
    debiased : the unbiased HSIC estimator (Song et al. 2012) instead of the biased one (needs n ≥ 4).

    Returns
    -------
    torch.Tensor
        (L, L) or (L, M), float64, on the first representation's device.

    References
    ----------
    S. Kornblith, M. Norouzi, H. Lee, G. Hinton. *Similarity of Neural Network Representations Revisited*. ICML 2019
    (its Figure 5: CKA between every pair of a network's layers).

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> X = torch.randn(300, 6, generator=g, dtype=torch.float64)
    >>> layers = [X, 2 * X, torch.randn(300, 6, generator=g, dtype=torch.float64)]
    >>> linear_cka_matrix(layers).round(decimals=3)
    tensor([[1.0000, 1.0000, 0.0140],
            [1.0000, 1.0000, 0.0140],
            [0.0140, 0.0140, 1.0000]], dtype=torch.float64)
    >>> linear_cka_matrix(layers[:1], others=layers[1:]).round(decimals=3)
    tensor([[1.0000, 0.0140]], dtype=torch.float64)
    """
    left, right = _validated(representations, others)
    return _cka_matrices(left, right, (debiased,))[0]


def linear_cka_matrices(representations, others=None) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`linear_cka_matrix` biased and debiased at once: ``(biased, debiased)``, from one set of cross products
    (they are the costly part, and both estimators are made of them)."""
    left, right = _validated(representations, others)
    biased, debiased = _cka_matrices(left, right, (False, True))
    return biased, debiased


def _validated(representations, others) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    reps = list(representations)
    more = None if others is None else list(others)
    if not reps or (more is not None and not more):
        raise ValueError("linear_cka_matrix needs at least one representation on each side")
    first = as_points(reps[0], name="representations[0]")
    left = [first] + [_paired(first, r)[1] for r in reps[1:]]
    return left, None if more is None else [_paired(first, r)[1] for r in more]


def _cka_matrices(left: list[torch.Tensor], right: list[torch.Tensor] | None, estimators: tuple[bool, ...]):
    """CKA between validated representations of the same n points (module docstring), one matrix per estimator
    (``True``: debiased): every pair of ``left`` when ``right`` is None, else each of ``left`` against each of
    ``right``. Each representation's own HSIC is computed once; the d × d cross products when the points outnumber
    every representation's dimensions (each representation centred when a product needs it, two at a time), else
    each one's n × n Gram matrix, made once."""
    n = left[0].shape[0]
    need = 4 if any(estimators) else 2
    if n < need:
        raise ValueError(f"linear CKA needs at least {need} points; got {n}")
    symmetric = right is None
    # Centred one at a time, when needed (memory: the inputs and two centred at once, not a centred copy of each)
    xs = [_Centring(x) for x in (left if symmetric else left + right)]
    gram = n <= max(x.shape[1] for x in xs)
    grams, rows, own = [], [], []
    for x in xs:
        c = x()
        if any(estimators):
            rows.append(c.to(torch.float64).pow(2).sum(dim=1))
        if gram:
            grams.append(_cross(c.T, c.T))
            own.append((grams[-1] * grams[-1]).sum())
        else:
            own.append(_cross(c, c).pow(2).sum())

    def hsic(h: torch.Tensor, i: int, j: int, debiased: bool) -> torch.Tensor:
        return _debiased(h, rows[i], rows[j], n) if debiased else h

    owns = [[hsic(h, k, k, d) for k, h in enumerate(own)] for d in estimators]
    for k, h in enumerate(owns[0]):
        if not h > 0:
            which = f"representation {k}" if k < len(left) else f"others[{k - len(left)}]"
            raise ValueError(f"linear CKA is undefined for a representation whose points are all equal ({which})")
    columns = range(len(left)) if symmetric else range(len(left), len(xs))
    outs = [torch.empty(len(left), len(columns), dtype=torch.float64, device=left[0].device) for _ in estimators]
    for i in range(len(left)):
        xi = None if gram else xs[i]()
        for b, j in enumerate(columns):
            if symmetric and j <= i:
                for out in outs:
                    out[i, b] = 1.0 if i == j else out[j, i]
                continue
            # ‖XⱼᵀXᵢ‖²_F: the biased HSIC, times (n − 1)²
            h = (grams[i] * grams[j]).sum() if gram else _cross(xs[j](), xi).pow(2).sum()
            for out, d, o in zip(outs, estimators, owns):
                out[i, b] = hsic(h, i, j, d) / torch.sqrt(o[i] * o[j])
    return outs
