r"""A point cloud's measures from running sums, batch by batch: what a layer's spectrum and isotropy need without
holding its points (issue "Every layer of a 1B–8B model in bounded memory", item 2: states streamed into
statistics).

:class:`Moments` keeps, in float64 on the device of the first batch, the count :math:`n`, the mean :math:`\mu`, the
centred scatter :math:`S = \sum_i (x_i-\mu)(x_i-\mu)^\top` (d × d), the sum of unit rows :math:`s = \sum_i
x_i/\lVert x_i\rVert` and the sum of absolute values per dimension. A batch B (its own count :math:`n_B`, mean
:math:`\mu_B` and centred scatter :math:`S_B`) is folded in by Chan, Golub & LeVeque's pairwise update

.. math::  S \leftarrow S + S_B + \frac{n\,n_B}{n+n_B}\,\delta\delta^\top,\quad
           \mu \leftarrow \mu + \frac{n_B}{n+n_B}\,\delta,\quad \delta = \mu_B - \mu,

so that no sum of squares far from the origin is differenced (:math:`X^\top X - n\mu\mu^\top` would cancel
catastrophically where a hidden state's mean dwarfs its spread, as an LLM's massive activations do). From them, with
the eigenvalues of the covariance :math:`C = S/(n-1)` and of the second moment :math:`X^\top X = S + n\mu\mu^\top`:
IsoScore and the participation ratio (of :math:`C`), the effective rank and the stable rank (of :math:`X^\top X`, the
points as they are: the in-memory functions' defaults), the variance effective rank and α-ReQ (of :math:`C`, also
over Li et al.'s ranks), the mean cosine between distinct points (:math:`(\lVert s\rVert^2-n)/(n(n-1))`) and each
dimension's mean |activation|. Each equals the function of :mod:`isoflow.metrics` on all the points (tested, to
float64 rounding), with memory O(d²) whatever n.

References: T. F. Chan, G. H. Golub, R. J. LeVeque. *Updating formulae and a pairwise algorithm for computing sample
variances*. COMPSTAT 1982 (Stanford report STAN-CS-79-773, 1979).

Examples
--------
>>> import torch
>>> from isoflow.metrics import isoscore
>>> from isoflow.metrics.moments import Moments
>>> x = torch.randn(1000, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * torch.arange(1, 9)
>>> m = Moments(8)
>>> for batch in x.split(300):
...     _ = m.update(batch)
>>> abs(m.sizes()["isoscore"] - isoscore(x)) < 1e-12
True
"""

from __future__ import annotations

import torch

from ._validate import ArrayLike, as_points
from .isotropy import _isoscore_from_pr, _participation_ratio, _unit_rows
from .spectrum import _effective_rank_of, _stable_rank_of, covariance_sizes_of, descending_eigenvalues


class Moments:
    """Running sums of points of ``dim`` dimensions (module docstring): :meth:`update` with each batch, then
    :meth:`sizes`. Memory: three d-vectors and one d × d matrix, float64."""

    def __init__(self, dim: int):
        self.dim = int(dim)
        self.n = 0
        self.mean = self.scatter = self.unit_sum = self.unit_squares = self.abs_sum = None

    def update(self, X: ArrayLike) -> Moments:
        """Fold the rows of ``X`` (n_b × dim) in; returns self."""
        x = as_points(X, min_points=1).to(torch.float64)
        if x.shape[1] != self.dim:
            raise ValueError(f"a batch of {x.shape[1]} dimensions; these moments are of {self.dim}")
        if self.mean is None:
            zeros = torch.zeros(self.dim, dtype=torch.float64, device=x.device)
            self.mean, self.unit_sum, self.unit_squares, self.abs_sum = (
                zeros,
                zeros.clone(),
                zeros.clone(),
                zeros.clone(),
            )
            self.scatter = torch.zeros(self.dim, self.dim, dtype=torch.float64, device=x.device)
        n_b = x.shape[0]
        mean_b = x.mean(dim=0)
        xc = x - mean_b
        delta = mean_b - self.mean
        total = self.n + n_b
        self.scatter += xc.T @ xc + (self.n * n_b / total) * torch.outer(delta, delta)
        self.mean += delta * (n_b / total)
        self.n = total
        unit = _unit_rows(x)
        self.unit_sum += unit.sum(dim=0)
        self.unit_squares += (unit * unit).sum(dim=0)
        self.abs_sum += x.abs().sum(dim=0)
        return self

    def covariance(self) -> torch.Tensor:
        """:math:`S/(n-1)`."""
        self._need(2)
        return self.scatter / (self.n - 1)

    def second_moment(self) -> torch.Tensor:
        """:math:`X^\\top X = S + n\\mu\\mu^\\top`: the points as they are, not centred."""
        self._need(1)
        return self.scatter + self.n * torch.outer(self.mean, self.mean)

    def sizes(self) -> dict[str, float]:
        """The measures of all the points folded in: ``isoscore``, ``participation_ratio``, ``effective_rank``,
        ``stable_rank``, ``variance_effective_rank``, ``alpha_req``, ``alpha_req_li`` (NaN where the covariance's
        numerical rank is below the fitted range) and ``cosine_anisotropy``, each as its function computes it."""
        self._need(2)
        covariance = self.covariance()
        pr = _participation_ratio(covariance)
        size = max(self.n, self.dim)  # the tolerance of the in-memory eigenvalues (spectrum._eigenvalues)
        raw, centred = (descending_eigenvalues(m, size) for m in (self.second_moment(), covariance))
        return {
            "isoscore": float(_isoscore_from_pr(pr, self.dim)),
            "participation_ratio": float(pr),
            "effective_rank": _effective_rank_of(raw),
            "stable_rank": _stable_rank_of(raw),
            **covariance_sizes_of(centred),
            "cosine_anisotropy": (
                float((self.unit_sum @ self.unit_sum - self.n) / (self.n * (self.n - 1)))
                if self.unit_sum is not None
                else float("nan")  # dimensions dropped (without): the rows' lengths, so their directions, changed
            ),
        }

    def cosine_shares(self) -> torch.Tensor:
        r"""Each dimension's share of the mean cosine of all distinct pairs, as
        :func:`isoflow.metrics.outliers.cosine_shares`: :math:`((\sum_i u_{ik})^2 - \sum_i u_{ik}^2)/(n(n-1))`."""
        self._need(2)
        return (self.unit_sum**2 - self.unit_squares) / (self.n * (self.n - 1))

    def without(self, dims) -> Moments:
        """The moments of the same points without the dimensions ``dims`` (their spectrum and IsoScore, as of
        :func:`isoflow.metrics.outliers.drop_dimensions`'s points; not their cosines, which the dropped coordinates'
        share of each row's length changes: NaN)."""
        self._need(1)
        keep = torch.ones(self.dim, dtype=torch.bool, device=self.mean.device)
        keep[list(dims)] = False
        rest = Moments(int(keep.sum()))
        rest.n, rest.mean, rest.abs_sum = self.n, self.mean[keep].clone(), self.abs_sum[keep].clone()
        rest.scatter = self.scatter[keep][:, keep].clone()
        return rest

    def mean_abs(self) -> torch.Tensor:
        """Each dimension's mean |activation| (what outlier dimensions are read from)."""
        self._need(1)
        return self.abs_sum / self.n

    def _need(self, n: int) -> None:
        if self.n < n:
            raise ValueError(f"{self.n} point(s) folded in; these measures need at least {n}")
