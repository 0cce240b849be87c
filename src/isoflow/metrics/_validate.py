"""Input checks shared by every metric: one entry, one set of error messages.

Every public metric funnels its inputs through :func:`as_points` (and, where it
takes labels, :func:`encode_labels`), so a researcher gets the same clear
``ValueError`` whichever metric first sees the bad input.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

ArrayLike = Any  # torch.Tensor | np.ndarray | nested sequences


def _shared_tensor(arr: np.ndarray) -> torch.Tensor:
    """``arr`` as a tensor sharing its memory. A read-only array (a memory-mapped layer file, a Parquet column) is used
    as it is, not copied, since no metric writes into its input; torch's warning that writing to it would be undefined
    is silenced for that case only (torch prints it once per process, from whichever caller comes first)."""
    if arr.flags.writeable:
        return torch.from_numpy(arr)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)
        return torch.from_numpy(arr)


def as_points(X: ArrayLike, *, name: str = "X", min_points: int = 2, check_finite: bool = True) -> torch.Tensor:
    """Return ``X`` as a floating ``(n_points, dim)`` tensor on its own device.

    Integer and boolean inputs are promoted to float64 (documented behaviour,
    not an error): counts or one-hot rows are legitimate point clouds.
    Floating inputs keep their dtype and device; nothing is copied when ``X``
    already is a floating tensor.
    """
    if isinstance(X, torch.Tensor):
        t = X
    else:
        arr = np.asarray(X)
        if arr.dtype == object:
            raise ValueError(f"{name} must be a numeric array; got an object array (ragged rows or mixed types?)")
        t = _shared_tensor(np.ascontiguousarray(arr))
    if t.is_complex():
        raise ValueError(f"{name} must be real-valued; got dtype {t.dtype}")
    if not t.is_floating_point():
        t = t.to(torch.float64)
    if t.ndim != 2:
        raise ValueError(
            f"{name} must have shape (n_points, dim); got a {t.ndim}-d array of shape {tuple(t.shape)}"
            + (" (use X.reshape(-1, 1) for 1-d data)" if t.ndim == 1 else "")
        )
    n, d = t.shape
    if n < min_points:
        raise ValueError(f"{name} needs at least {min_points} points (rows); got {n}")
    if d < 1:
        raise ValueError(f"{name} has no columns (dim=0)")
    # A NaN/inf anywhere makes its row sum non-finite: one cheap pass, the full scan only on failure.
    if check_finite and not bool(torch.isfinite(t.sum(dim=1)).all()):
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            rows = torch.nonzero(bad.any(dim=1)).flatten()
            raise ValueError(
                f"{name} contains {int(bad.sum())} NaN/inf value(s) in {rows.numel()} row(s); "
                f"the first is row {int(rows[0]) + 1} (rows counted from 1). Drop or repair those rows first."
            )
        # Otherwise the row sums merely overflowed: the values themselves are finite.
    return t


def power_of_two_factor(x: torch.Tensor) -> torch.Tensor:
    """The power of two (a 0-d tensor of ``x``'s dtype and device) that brings max|x| into [0.5, 1)."""
    m = x.detach().abs().amax()
    _, e = torch.frexp(m)  # m = f * 2**e with f in [0.5, 1)
    maxexp = math.frexp(torch.finfo(x.dtype).max)[1]  # 128 (float32), 1024 (float64)
    # Keep the factor itself representable (all-zero input: e = 0, factor 1).
    e = e.clamp(min=-(maxexp - 1), max=maxexp).to(x.dtype)
    return torch.pow(torch.tensor(2.0, dtype=x.dtype, device=x.device), -e)


# Within this range of max|x| (powers of two) no square or sum of squares of d ≤ 2**16 coordinates under- or overflows
# float32, so rescaling would change no rounding: the NumPy path skips it there (see centred_rescaled_numpy).
_NO_RESCALE_WITHIN = 32
# Rows per chunk whose float32 sums are added in float64: the column means here, IsoScore's covariance (isotropy.py).
SUM_CHUNK_ROWS = 1024


def _chunked_column_means(a: np.ndarray) -> np.ndarray:
    """Column means of ``a`` in float64 from BLAS products of 1,024-row chunks with a ones vector, in ``a``'s dtype,
    the chunks' sums added in float64 (as IsoScore's covariance, :func:`isotropy._scatter_matrix`): within
    32·eps·mean|a| (eps of ``a``'s dtype; ~10 ulps of the mean in float32) of the float64 mean, and several times
    faster than NumPy's float64 reduction, one thread converting every value (benchmarks/metric_step_parts.py)."""
    ones = np.ones(min(SUM_CHUNK_ROWS, a.shape[0]), dtype=a.dtype)
    total = np.zeros(a.shape[1])
    for i0 in range(0, a.shape[0], SUM_CHUNK_ROWS):
        chunk = a[i0 : i0 + SUM_CHUNK_ROWS]
        total += ones[: chunk.shape[0]] @ chunk
    return total / a.shape[0]


def centred_rescaled_numpy(a: np.ndarray, out: np.ndarray, *, precise_mean: bool = True) -> int:
    """Write ``a`` times 2**-e, centred, into ``out`` (``a``'s shape and dtype; it may be a strided view) and return
    e: :func:`rescaled`, then centring, in NumPy (for the NumPy-BLAS path of :mod:`.device_policy`). e brings max|a|
    into [0.5, 1) when max|a| lies outside [2**-32, 2**32], else e = 0: a power of two scales every rounded value
    exactly, so between those bounds the scale-free metrics come out the same bit for bit, one pass sooner. The mean
    is rounded to ``a``'s dtype; with ``precise_mean`` it is accumulated in float64 (:func:`_chunked_column_means`;
    a float64 reduction when e != 0, where a sum in ``a``'s dtype could overflow), else taken in ``a``'s dtype, for
    metrics that any shift near the mean serves. max|a| comes from the maximum and the minimum: no copy beyond
    ``out``."""
    scale = max(float(a.max()), -float(a.min()))
    inside = 2.0**-_NO_RESCALE_WITHIN <= scale <= 2.0**_NO_RESCALE_WITHIN
    e = int(np.frexp(scale)[1]) if scale > 0 and not inside else 0
    if e:  # the mean of ``a`` scaled by the same power of two: exactly the mean of the rescaled rows
        mean = np.ldexp(a.mean(axis=0, dtype=np.float64), -e)
        np.ldexp(a, -e, out=out)
        out -= mean.astype(a.dtype)
    else:
        mean = _chunked_column_means(a) if precise_mean else a.mean(axis=0)
        np.subtract(a, mean.astype(a.dtype), out=out)
    return e


def rescaled(x: torch.Tensor) -> torch.Tensor:
    """``x`` times the power of two that brings max|x| into [0.5, 1): for the scale-invariant metrics.

    Silhouette, IsoScore, cosines, LID and TwoNN do not change when every coordinate is multiplied by the same
    factor, but their squared distances and norms overflow (float32 beyond ~1e19, float64 beyond ~1e154) or
    underflow (below ~1e-19 / ~1e-154). A power of two is exact in binary floating point, so data of ordinary
    magnitude gives bit-identical results; no host sync (the factor stays a tensor on ``x``'s device).
    """
    return x * power_of_two_factor(x)


# Rows longer than the median row by these factors: distances among the other rows lose their precision in float32
# (squared norms span 2**20 and more), then in any type (they vanish when centring next to the long row).
PROMOTE_RANGE = 2.0**10
REFUSE_RANGE = 2.0**40


def distance_dtype(x: torch.Tensor, name: str = "X") -> torch.dtype:
    """The dtype in which the pairwise distances of ``x`` keep their precision: ``x``'s own, float64 when one row
    is over 2**10 times longer than the median row; a ``ValueError`` (naming the row) beyond 2**40, where no
    floating-point type keeps the distances among the other rows. Costs one O(n·d) pass and a host sync."""
    norms = torch.linalg.vector_norm(rescaled(x.detach().to(torch.float64)), dim=1)
    nonzero = norms[norms > 0]
    if nonzero.numel() == 0:
        return x.dtype
    ratio = float(nonzero.max() / nonzero.median())
    if ratio > REFUSE_RANGE:
        row = int(norms.argmax())
        raise ValueError(
            f"{name}: row {row} is {ratio:.1e} times longer than the median row; distances among the other rows are "
            "lost to rounding in any floating-point type. Remove or repair that row (corrupt embeddings?)"
        )
    return torch.float64 if ratio > PROMOTE_RANGE and x.dtype != torch.float64 else x.dtype


@dataclass(frozen=True)
class Clusters:
    """Labels encoded as cluster codes ``0..k-1`` (one per point) on a device.

    ``sizes[c]`` is the number of points in cluster ``c``. Build it once with
    :func:`encode_labels` and reuse it when the labels do not change (e.g. at
    every step of an optimisation) to avoid re-encoding and host syncs.
    """

    codes: torch.Tensor  # (n,) int64
    sizes: torch.Tensor  # (k,) int64
    k: int

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    def to(self, device: torch.device | str) -> Clusters:
        return Clusters(self.codes.to(device), self.sizes.to(device), self.k)

    def indicators(self, dtype: torch.dtype) -> torch.Tensor:
        """(k, n): row c is cluster c's 0/1 indicator. No host sync (``one_hot`` checks its codes' range on the host:
        two syncs a call on a GPU, each stalling the launches behind it)."""
        return (torch.arange(self.k, device=self.codes.device)[:, None] == self.codes[None, :]).to(dtype)

    def subset(self, index: torch.Tensor) -> Clusters:
        """The same k clusters restricted to ``index`` (some may be empty); no host sync."""
        codes = self.codes[index]
        # Not bincount: on a GPU it reads the codes' maximum back to the host first.
        sizes = torch.zeros(self.k, dtype=torch.int64, device=codes.device)
        return Clusters(codes, sizes.scatter_add_(0, codes, torch.ones_like(codes)), self.k)


def encode_labels(
    labels: ArrayLike, n_points: int | None = None, *, device: torch.device | str | None = None
) -> Clusters:
    """Encode class labels as cluster codes.

    ``labels`` is either a 1-d vector (any values: ints, strings, ...) or a
    2-d ``(n_points, n_labels)`` multi-label 0/1 matrix, in which case every
    distinct row (label *set*) is one cluster, as in Mickus et al. (2024).
    """
    if isinstance(labels, Clusters):
        codes = labels.codes
        if n_points is not None and codes.shape[0] != n_points:
            raise ValueError(f"labels cover {codes.shape[0]} points but X has {n_points} rows")
        return labels if device is None else labels.to(device)
    is_tensor = isinstance(labels, torch.Tensor)
    lab = labels.detach() if is_tensor else np.asarray(labels)
    if lab.ndim not in (1, 2):
        raise ValueError(f"labels must be 1-d (classes) or 2-d (multi-label 0/1 matrix); got shape {tuple(lab.shape)}")
    multi = lab.ndim == 2  # each distinct row (label set) is one cluster
    if is_tensor:
        _, codes = torch.unique(lab, dim=0 if multi else None, return_inverse=True)
        codes = codes.to(device if device is not None else lab.device)
    else:
        _, codes_np = np.unique(lab, axis=0 if multi else None, return_inverse=True)
        codes = torch.from_numpy(codes_np.reshape(-1).astype(np.int64)).to(device or "cpu")
    codes = codes.reshape(-1).to(torch.int64)
    if n_points is not None and codes.shape[0] != n_points:
        raise ValueError(f"labels have {codes.shape[0]} entries but X has {n_points} rows; they must match one-to-one")
    k = int(codes.max()) + 1 if codes.numel() else 0
    sizes = torch.bincount(codes, minlength=k)
    return Clusters(codes, sizes, k)


def check_cluster_count(clusters: Clusters) -> None:
    """scikit-learn's rule for the silhouette: 2 <= n_labels <= n_samples - 1."""
    n, k = clusters.n, clusters.k
    if not 2 <= k <= n - 1:
        raise ValueError(
            f"Number of labels is {k}. Valid values are 2 to n_samples - 1 = {n - 1} (inclusive): "
            "the silhouette needs at least two clusters and at least one cluster with two points."
        )
