"""Exact silhouette scores, Euclidean (blocked, symmetric) and squared-Euclidean (closed form).

Both reduce the data to ``S[i, c] = sum_{j in c} dist(x_i, x_j)``, the summed
distance from every point to every cluster, and share the final step
(:func:`_silhouette_values`), which follows scikit-learn's conventions. With many
clusters (above ``SCATTER_ABOVE_K``) S is never kept whole: each strip of columns'
sums becomes its points' silhouettes at once (:func:`_strip_silhouettes`).
"""

from __future__ import annotations

import numpy as np
import torch

from ._validate import (
    ArrayLike,
    Clusters,
    as_points,
    centred_rescaled_numpy,
    check_cluster_count,
    distance_dtype,
    encode_labels,
    rescaled,
)
from .device_policy import block_size, numpy_blas, triangle_blocks

DEFAULT_BLOCK = 1024
# Above this many clusters the cluster sums take strips of every row added up by cluster (a sparse product or one
# index_add_, O(n²) whatever k), not the one-hot GEMM (O(n²k)): on a 2-core CPU the two cross between 16 and 256
# clusters (by size), and the strips are 2.0-3.6x faster at k = 821 (benchmarks/results/silhouette_paths.json).
SCATTER_ABOVE_K = 128
# Up to this many clusters the NumPy path sums each block into each cluster with matrix-vector products, not one
# thin GEMM: OpenBLAS's GEMV reads a cache-resident block 2.6x faster at k = 2 and 1.4x at k = 4; at k = 8 its GEMM
# is 1.6x faster (benchmarks/results/metric_step_parts.json, "block sums").
GEMV_UP_TO_K = 4


def _silhouette_values(
    S: torch.Tensor, codes: torch.Tensor, sizes: torch.Tensor, *, overwrite: bool = False
) -> torch.Tensor:
    """Each point's silhouette from its per-cluster distance sums ``S`` (m, k), float64, for m points of the set
    (``codes``: theirs; ``sizes``: the whole set's clusters); ``overwrite``: S is scratch, its means go into it.

    a(i) = S[i, own] / (|own| - 1); b(i) = min_{c != own} S[i, c] / |c|;
    s(i) = (b - a) / max(a, b), 0 when a = b = 0 and 0 for singleton clusters.
    """
    sizes = sizes.to(S.dtype)
    own_size = sizes[codes]
    a = S.gather(1, codes[:, None]).squeeze(1) / (own_size - 1).clamp(min=1)
    # A cluster absent from this set (size 0, e.g. from a sample) is never the nearest one.
    # In place from here: each (m, k) temporary costs a pass.
    mean_other = S.div_(sizes.clamp(min=1)[None, :]) if overwrite else S / sizes.clamp(min=1)[None, :]
    mean_other.masked_fill_((sizes == 0)[None, :], float("inf"))
    mean_other.scatter_(1, codes[:, None], float("inf"))
    b = mean_other.amin(dim=1)
    s = torch.nan_to_num((b - a) / torch.maximum(a, b), nan=0.0)
    return torch.where(own_size > 1, s, torch.zeros_like(s))


def _silhouette_from_sums(S: torch.Tensor, clusters: Clusters) -> torch.Tensor:
    """Mean silhouette from per-cluster distance sums ``S`` (n, k), float64 (:func:`_silhouette_values`)."""
    return _silhouette_values(S, clusters.codes, clusters.sizes).mean()


def _silhouette_values_numpy(
    S_t: np.ndarray, codes: np.ndarray, sizes: np.ndarray, *, overwrite: bool = False
) -> np.ndarray:
    """:func:`_silhouette_values` in NumPy, from S transposed (k, m) (``overwrite``: S_t is scratch): after NumPy's
    products even these few small torch ops would wait on OpenBLAS's still-spinning threads (12 ms against 0.1 ms at
    paper size: benchmarks/metric_step_parts.py).
    """
    sizes = sizes.astype(np.float64)
    own_size = sizes[codes]
    rows = np.arange(codes.shape[0])
    a = S_t[codes, rows] / np.maximum(own_size - 1, 1)
    # In place from here: each (k, m) temporary costs a pass.
    mean_other = np.divide(S_t, np.maximum(sizes, 1)[:, None], out=S_t if overwrite else None)
    mean_other[sizes == 0] = np.inf
    mean_other[codes, rows] = np.inf
    b = mean_other.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.nan_to_num((b - a) / np.maximum(a, b), nan=0.0)
    return np.where(own_size > 1, s, 0.0)


def _silhouette_from_sums_numpy(S_t: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> float:
    """Mean silhouette from S transposed (k, n) (:func:`_silhouette_values_numpy`)."""
    return float(_silhouette_values_numpy(S_t, codes, sizes).mean())


def _augmented_numpy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[x, ‖x‖², 1] and [−2x, 1, ‖x‖²] of rescaled, centred rows, in NumPy from the start (see
    :func:`_euclidean_cluster_sums_numpy`): the same steps as :func:`_centred` and the torch path's."""
    n, d = x.shape
    left, right = np.empty((n, d + 2), dtype=x.dtype), np.empty((n, d + 2), dtype=x.dtype)
    centred_rescaled_numpy(x, out=left[:, :d], precise_mean=False)  # any shift near the mean will do (_centred)
    np.einsum("ij,ij->i", left[:, :d], left[:, :d], out=left[:, d])
    left[:, d + 1] = 1.0
    np.multiply(left[:, :d], -2.0, out=right[:, :d])
    right[:, d] = 1.0
    right[:, d + 1] = left[:, d]
    return left, right


def _euclidean_cluster_sums_numpy(
    x: np.ndarray, codes: np.ndarray | None, k: int, block: int, indicator_t: np.ndarray | None = None
) -> np.ndarray:
    """:func:`_euclidean_cluster_sums` in NumPy from end to end (the rescaling and centring, the products, square
    roots and per-cluster sums: :func:`_product_sums`; above ``SCATTER_ABOVE_K`` clusters
    :func:`_strip_silhouettes_numpy` instead): on a host whose fastest CPU BLAS is NumPy's OpenBLAS, a torch op
    between two of its products would fight OpenBLAS's still-spinning threads for the cores, and OpenBLAS's products
    torch's (device_policy.py). Returns S transposed, (k, n). ``indicator_t`` (k, n): sums into any 0/1 rows instead
    of ``codes``' clusters (several clusterings at once: :func:`silhouettes`)."""
    left, right = _augmented_numpy(x)
    if indicator_t is None:
        indicator_t = codes[None, :] == np.arange(k)[:, None]
    n = left.shape[0]
    S = np.zeros((k, n), dtype=np.float64)
    buf = np.empty((min(block, n), min(block, n)), dtype=left.dtype)
    block_sums = _product_sums(indicator_t.astype(left.dtype), min(block, n))
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        for j0 in range(i0, n, block):
            j1 = min(j0 + block, n)
            D = np.matmul(left[i0:i1], right[j0:j1].T, out=buf[: i1 - i0, : j1 - j0])
            # No clamp pass before the square root (a tenth of the block's time): a squared distance that rounding
            # made negative (near-duplicate points) turns into a NaN that reaches the block's sums, and only then is
            # the block redone with those distances at 0, exactly what clamping would have given.
            with np.errstate(invalid="ignore"):
                np.sqrt(D, out=D)
            if i0 == j0:
                np.fill_diagonal(D, 0.0)  # exact zero self-distance, as scikit-learn does
            sums = block_sums(i0, i1, j0, j1, D)
            # Sums of non-negative numbers: NaN only if a distance was NaN (one reduction, not a mask per array).
            if np.isnan(sum(values.sum() for _, _, values in sums)):
                np.nan_to_num(D, copy=False, nan=0.0)
                sums = block_sums(i0, i1, j0, j1, D)
            for clusters, points, values in sums:
                S[clusters, points] += values
    return S


def strip_width(n: int, block: int) -> int:
    """Columns per strip of the many-cluster path: a strip of every row holds about as many distances as a block."""
    return max(1, min(n, block * block // n))


def _strip_silhouettes_numpy(x: np.ndarray, codes: np.ndarray, sizes: np.ndarray, block: int) -> np.ndarray:
    """Every point's silhouette for more than ``SCATTER_ABOVE_K`` clusters, from the raw rows ``x``: the distances of
    every point to a strip of columns (:func:`strip_width`), added up down the rows by the rows' clusters as one
    product with their sparse indicator (SciPy, one non-zero per column), O(n²) whatever k, and each strip's (k, width)
    sums turned into its points' silhouettes at once: the (k, n) sums are never kept (writing them and reading them back
    made the step 1.4× slower: 24.8 against 17.4 ms, 2,275 points, 821 clusters, float32). Not the upper triangle:
    its transposed half would need D's columns added up by cluster, which NumPy and SciPy do several times slower (a
    reduceat down the rows, or a product with the transpose) than the second half's product and square roots; nor
    square blocks: adding each block's (k, b) sums into S cost as much as the rest."""
    from scipy.sparse import csr_matrix

    left, right = _augmented_numpy(x)
    n, k = left.shape[0], sizes.shape[0]
    width = strip_width(n, block)
    indicator = csr_matrix((np.ones(n, dtype=left.dtype), (codes, np.arange(n))), shape=(k, n))
    s = np.empty(n, dtype=np.float64)
    buf = np.empty((n, width), dtype=left.dtype)
    for j0 in range(0, n, width):
        j1 = min(j0 + width, n)
        D = np.matmul(left, right[j0:j1].T, out=buf[:, : j1 - j0])
        with np.errstate(invalid="ignore"):  # no clamp: see _euclidean_cluster_sums_numpy
            np.sqrt(D, out=D)
        D[np.arange(j0, j1), np.arange(j1 - j0)] = 0.0  # exact zero self-distance, as scikit-learn does
        sums = indicator @ D
        if np.isnan(sums.sum()):
            np.nan_to_num(D, copy=False, nan=0.0)
            sums = indicator @ D
        s[j0:j1] = _silhouette_values_numpy(sums.astype(np.float64), codes[j0:j1], sizes, overwrite=True)
    return s


# A block's sums as (rows of S: its clusters, columns of S: its points, values) for `S[rows, columns] += values`.
BlockSums = list[tuple[slice | np.ndarray, slice, np.ndarray]]


def _product_sums(onehot_t: np.ndarray, b: int):
    """A block's sums into its columns' points and, off the diagonal, into its rows' points, as products with the
    clusters' indicator vectors ``onehot_t`` (k, n) (up to ``GEMV_UP_TO_K`` clusters, one matrix-vector product each)
    or one thin GEMM."""
    k, dtype = onehot_t.shape[0], onehot_t.dtype
    onehot = np.ascontiguousarray(onehot_t.T)  # (n, k): D·onehot reads D row-major
    cols, rows = np.empty((k, b), dtype), np.empty((k, b), dtype)

    def block_sums(i0: int, i1: int, j0: int, j1: int, D: np.ndarray) -> BlockSums:
        into_cols, into_rows = cols[:, : j1 - j0], rows[:, : i1 - i0]
        if k > GEMV_UP_TO_K:
            np.matmul(onehot_t[:, i0:i1], D, out=into_cols)
            if j0 != i0:
                into_rows[:] = (D @ onehot[j0:j1]).T
        else:
            for c in range(k):
                np.matmul(onehot_t[c, i0:i1], D, out=into_cols[c])
                if j0 != i0:
                    np.matmul(D, onehot_t[c, j0:j1], out=into_rows[c])
        every = slice(None)
        return [(every, slice(j0, j1), into_cols)] + ([(every, slice(i0, i1), into_rows)] if j0 != i0 else [])

    return block_sums


def _block(x: torch.Tensor, block: int | None) -> int:
    """Rows per block: the caller's, or the device's size policy (device_policy.py)."""
    return block or block_size(x.shape[0], x.device, x.dtype, DEFAULT_BLOCK, upper_triangle=True)


def _augmented(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[x, ‖x‖², 1] and [−2x, 1, ‖x‖²] of rescaled, centred rows: their product is the squared distances."""
    sq = (x * x).sum(dim=1, keepdim=True)
    one = torch.ones_like(sq)
    return torch.cat([x, sq, one], dim=1), torch.cat([-2.0 * x, one, sq], dim=1)


def _strip_silhouettes(x: torch.Tensor, clusters: Clusters, block: int | None) -> torch.Tensor:
    """Every point's silhouette (n,) for more than ``SCATTER_ABOVE_K`` clusters (multi-label tasks: hundreds of label
    sets), for rescaled, centred ``x``, as :func:`_strip_silhouettes_numpy`: strips of every row added up down the rows
    by one index_add_ each, O(n²) whatever k, and each strip's (k, width) sums turned into its points' silhouettes at
    once, so memory is O(n·width + k·width), no (n, k) sums."""
    n = x.shape[0]
    width = strip_width(n, _block(x, block))
    left, right = _augmented(x)
    codes = clusters.codes
    s = torch.empty(n, dtype=torch.float64, device=x.device)
    # One flat buffer each for the distances, their sums by cluster and those in float64, reused by every strip
    # (contiguous views of their fronts): on a CPU, a fresh one each time cost its pages' first touch (2,275 points,
    # 821 clusters, float32, in a fresh process: 12.2 against 10.2 ms a step).
    buffer, sums, sums64 = x.new_empty(n * width), x.new_empty(clusters.k * width), s.new_empty(clusters.k * width)
    for j0 in range(0, n, width):
        w = min(j0 + width, n) - j0
        D = torch.matmul(left, right[j0 : j0 + w].T, out=buffer[: n * w].view(n, w)).clamp_(min=0.0).sqrt_()
        D[torch.arange(j0, j0 + w, device=D.device), torch.arange(w, device=D.device)] = 0.0
        strip = sums[: clusters.k * w].view(clusters.k, w).zero_().index_add_(0, codes, D)
        strip64 = sums64[: strip.numel()].view_as(strip).copy_(strip)
        s[j0 : j0 + w] = _silhouette_values(strip64.T, codes[j0 : j0 + w], clusters.sizes, overwrite=True)
    return s


def _euclidean_cluster_sums(
    x: torch.Tensor, clusters: Clusters | None, block: int | None, indicator_t: torch.Tensor | None = None
) -> torch.Tensor:
    """S[i, c] = Σ_{j∈c} ‖x_i − x_j‖, visiting each pair of row blocks once (upper triangle), for rescaled, centred
    ``x`` (:func:`_centred`).

    Memory is O(block·columns + n·(d + k)), columns: block on a CPU, a row block's strip on a GPU
    (:func:`~isoflow.metrics.device_policy.triangle_blocks`); no n×n matrix is ever formed. Squared
    distances ‖x‖² + ‖y‖² − 2x·y come out of a single GEMM of the augmented rows
    [x, ‖x‖², 1]·[−2y, 1, ‖y‖²]ᵀ (no separate broadcast-add pass), on centred data
    (centring shrinks the norms, hence the cancellation error, without changing
    any distance). Per-cluster sums accumulate in float64. In torch (a GPU, or a host whose CPU BLAS is torch's; the
    NumPy one: :func:`_euclidean_cluster_sums_numpy`). ``indicator_t`` (k, n): sums into any 0/1 rows instead of the
    clusters' (several clusterings at once: :func:`silhouettes`).
    """
    n = x.shape[0]
    # The caller's block or the policy's, and on a GPU each row block's whole strip in one product.
    block, columns = triangle_blocks(n, x.device, x.dtype, DEFAULT_BLOCK, block)
    # The per-cluster sums are a thin GEMM (O(b²k) per block pair, at GEMM speed); many clusters: _strip_silhouettes.
    onehot_t = (clusters.indicators(x.dtype) if indicator_t is None else indicator_t.to(x.dtype)).contiguous()  # (k, n)
    left, right = _augmented(x)
    # Transposed: row-major reductions; every block adds into its columns.
    S = torch.zeros(onehot_t.shape[0], n, dtype=torch.float64, device=x.device)
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        for j0 in range(i0, n, columns):
            j1 = min(j0 + columns, n)
            D = (left[i0:i1] @ right[j0:j1].T).clamp_(min=0.0).sqrt_()
            if i0 == j0:
                D.fill_diagonal_(0.0)  # exact zero self-distance, as scikit-learn does (D starts at the diagonal)
            # onehotᵀ·D and onehotᵀ·Dᵀ, both written so the GEMM reads D row-major; Dᵀ only for the columns right of
            # the row block (within it, D's own columns already hold both (i, j) and (j, i)).
            # add_ on the view, not `S[...] +=`: Python's augmented assignment writes the view back onto itself, a
            # copy kernel each time.
            S[:, j0:j1].add_(onehot_t[:, i0:i1] @ D)
            r0 = max(i1, j0)
            if r0 < j1:
                S[:, i0:i1].add_((D[:, r0 - j0 :] @ onehot_t[:, r0:j1].T).T)
    return S.T


def _checked(X: ArrayLike, labels: ArrayLike, block: int | None) -> tuple[torch.Tensor, Clusters]:
    """The silhouettes' shared input checks: points, labels on the points' device, cluster count, block."""
    x = as_points(X)
    clusters = encode_labels(labels, x.shape[0], device=x.device)
    check_cluster_count(clusters)
    if block is not None and (isinstance(block, bool) or not isinstance(block, int) or block < 1):
        raise ValueError(f"block must be a positive integer or None (the device's size policy); got {block}")
    return x.to(distance_dtype(x)), clusters


def _centred(x: torch.Tensor) -> torch.Tensor:
    # The silhouette is scale-free: rescale (by a power of two, exactly) so that no squared distance overflows.
    # Any shift leaves distances unchanged; shifting by (about) the mean only shrinks the norms,
    # so the mean in x's own dtype is good enough and saves a float64 copy.
    x = rescaled(x)
    return x - x.mean(dim=0, keepdim=True)


def silhouette_tensor(X: torch.Tensor, clusters: Clusters, *, block: int | None = None) -> torch.Tensor:
    """Euclidean mean silhouette as a 0-d float64 tensor; no checks, no host sync.

    For loops that validated ``X`` and built ``clusters`` once (with
    :func:`isoflow.metrics.encode_labels`). Distances are computed in ``X``'s
    dtype (float32 runs the GEMM at full speed), reductions in float64.
    """
    with torch.no_grad():
        x = X.detach()
        # The whole step in NumPy, its rescaling and centring too (device_policy.py).
        many = clusters.k > SCATTER_ABOVE_K  # each strip's sums straight into its points' silhouettes
        if numpy_blas(x):
            codes, sizes = clusters.codes.numpy(), clusters.sizes.numpy()
            if many:
                mean = _strip_silhouettes_numpy(x.numpy(), codes, sizes, _block(x, block)).mean()
            else:
                mean = _silhouette_from_sums_numpy(
                    _euclidean_cluster_sums_numpy(x.numpy(), codes, clusters.k, _block(x, block)), codes, sizes
                )
            return torch.tensor(float(mean), dtype=torch.float64)
        if many:
            return _strip_silhouettes(_centred(x), clusters, block).mean()
        return _silhouette_from_sums(_euclidean_cluster_sums(_centred(x), clusters, block), clusters)


def silhouettes(X: ArrayLike, labelings, *, block: int | None = None) -> list[float]:
    """The Euclidean mean silhouette of each of several labellings of the same points, from one pass over the
    pairwise distances (their sums into every cluster of every labelling at once): choosing K for K-means costs one
    distance pass, not one per K. Each value equals :func:`silhouette` of that labelling.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    labelings : sequence of label sequences
        Each a labelling of the n points, as :func:`silhouette` takes it.
    block : int or None
        As :func:`silhouette`.

    Returns
    -------
    list of float
        One mean silhouette per labelling, in their order.

    References
    ----------
    P. J. Rousseeuw. *Silhouettes: a graphical aid to the interpretation and
    validation of cluster analysis*. J. Comput. Appl. Math. 20, 1987.

    Examples
    --------
    >>> import torch
    >>> X = torch.tensor([[0., 0.], [0., 1.], [10., 0.], [10., 1.]])
    >>> [round(s, 4) for s in silhouettes(X, [[0, 0, 1, 1], [0, 1, 0, 1]])]
    [0.9002, -0.4475]"""
    x = as_points(X)
    if block is not None and (isinstance(block, bool) or not isinstance(block, int) or block < 1):
        raise ValueError(f"block must be a positive integer or None (the device's size policy); got {block}")
    x = x.to(distance_dtype(x))
    clusterings = [encode_labels(labels, x.shape[0], device=x.device) for labels in labelings]
    if not clusterings:
        return []
    for clusters in clusterings:
        check_cluster_count(clusters)
    indicator_t = torch.cat([c.indicators(x.dtype) for c in clusterings])  # (Σk, n)
    offsets = np.cumsum([0] + [c.k for c in clusterings])
    with torch.no_grad():
        x = x.detach()
        if numpy_blas(x):
            block = _block(x, block)
            S_t = _euclidean_cluster_sums_numpy(x.numpy(), None, len(indicator_t), block, indicator_t.numpy())
            return [
                _silhouette_from_sums_numpy(S_t[a:b], c.codes.numpy(), c.sizes.numpy())
                for c, a, b in zip(clusterings, offsets[:-1], offsets[1:])
            ]
        S = _euclidean_cluster_sums(_centred(x), None, block, indicator_t)
        return [float(_silhouette_from_sums(S[:, a:b], c)) for c, a, b in zip(clusterings, offsets[:-1], offsets[1:])]


def silhouette(X: ArrayLike, labels: ArrayLike, *, block: int | None = None) -> float:
    r"""Exact mean silhouette coefficient with Euclidean distances (Rousseeuw, 1987).

    For point *i* in cluster :math:`C_i`,
    :math:`a(i) = \frac{1}{|C_i|-1}\sum_{j\in C_i} d(i,j)`,
    :math:`b(i) = \min_{C\ne C_i} \frac{1}{|C|}\sum_{j\in C} d(i,j)`,
    :math:`s(i) = \frac{b(i)-a(i)}{\max(a(i),b(i))}`, and the score is the mean of
    :math:`s(i)` over all points. scikit-learn's conventions hold: a point alone
    in its cluster scores 0, and 0/0 (all distances zero) scores 0.

    Same value as ``sklearn.metrics.silhouette_score(X, labels)`` (within 1e-6
    in float64). The n×n distance matrix is never built: row blocks of size
    ``block`` are paired once each (the matrix is symmetric, so each block
    product serves both blocks), so memory is O(block² + n·k) and time
    O(n²·d/2); above ``SCATTER_ABOVE_K`` clusters, strips of every row
    (time O(n²·d), memory O(block² + k·block²/n): no n×k sums are kept).
    Runs on ``X``'s device.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
    labels : 1-d class labels (any values), or a 2-d (n_points, n_labels)
        multi-label 0/1 matrix in which each distinct row is one cluster;
        or a prebuilt :class:`~isoflow.metrics.Clusters`.
    block : rows per block (memory ~ block² values of X's dtype on a CPU; on a GPU block × the rest of the row,
        within a quarter of its free memory); None: the device's size policy (1,024 on a CPU; on a GPU as few
        blocks as fit, see :mod:`isoflow.metrics.device_policy`).

    Returns
    -------
    float
        The mean silhouette, in [-1, 1].

    Raises
    ------
    ValueError
        Bad ``X`` (see :func:`isoflow.metrics.isoscore`), labels of the wrong
        length, or a number of clusters outside 2 .. n − 1.

    References
    ----------
    P. J. Rousseeuw. *Silhouettes: a graphical aid to the interpretation and
    validation of cluster analysis*. J. Comput. Appl. Math. 20, 1987.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import silhouette
    >>> X = torch.tensor([[0., 0.], [0., 1.], [10., 0.], [10., 1.]])
    >>> round(silhouette(X, [0, 0, 1, 1]), 4)  # a = 1, b = (10 + sqrt(101)) / 2 for every point: 1 - a / b
    0.9002"""
    x, clusters = _checked(X, labels, block)
    return float(silhouette_tensor(x, clusters, block=block))


def _sqeuclidean_cluster_sums(x: torch.Tensor, clusters: Clusters, block: int | None) -> torch.Tensor:
    """S[i, c] = Σ_{j∈c} ‖x_i − x_j‖² = |c|·(‖x_i − μ_c‖² + tr_c), tr_c = mean_{j∈c} ‖x_j − μ_c‖²."""
    x64 = x.to(torch.float64)
    sizes = clusters.sizes.to(torch.float64)
    mu = torch.zeros(clusters.k, x.shape[1], dtype=torch.float64, device=x.device)
    mu.index_add_(0, clusters.codes, x64)
    mu /= sizes[:, None]
    spread = torch.zeros(clusters.k, dtype=torch.float64, device=x.device)
    spread.index_add_(0, clusters.codes, ((x64 - mu[clusters.codes]) ** 2).sum(dim=1))
    tr = spread / sizes
    mu_sq = (mu * mu).sum(dim=1)
    block = block or block_size(x.shape[0], x.device, torch.float64, DEFAULT_BLOCK)
    S = torch.empty(x.shape[0], clusters.k, dtype=torch.float64, device=x.device)
    for i0 in range(0, x.shape[0], block):
        xi = x64[i0 : i0 + block]
        d2 = ((xi * xi).sum(dim=1, keepdim=True) - 2.0 * xi @ mu.T + mu_sq[None, :]).clamp_(min=0.0)
        S[i0 : i0 + block] = sizes[None, :] * (d2 + tr[None, :])
    return S


def silhouette_sqeuclidean_tensor(X: torch.Tensor, clusters: Clusters, *, block: int | None = None) -> torch.Tensor:
    """Squared-Euclidean mean silhouette as a 0-d float64 tensor; no checks, no host sync."""
    with torch.no_grad():
        S = _sqeuclidean_cluster_sums(_centred(X.detach()), clusters, block)
        return _silhouette_from_sums(S, clusters)


def silhouette_sqeuclidean(X: ArrayLike, labels: ArrayLike, *, block: int | None = None) -> float:
    r"""Mean silhouette with squared Euclidean distances, in O(n·k·d) time.

    Mickus et al. (2024) derive their argument with squared distances, for which
    the mean distance from a point to a cluster has a closed form:
    :math:`\frac{1}{|C|}\sum_{j\in C}\lVert x_i-x_j\rVert^2 = \lVert x_i-\mu_C\rVert^2 + \operatorname{tr}\Sigma_C`
    (:math:`\mu_C`, :math:`\Sigma_C`: mean and biased covariance of cluster C).
    For the point's own cluster the sum excludes the zero self-distance and is
    divided by :math:`|C|-1`. Otherwise as :func:`silhouette`; equals
    ``sklearn.metrics.silhouette_score(X, labels, metric="sqeuclidean")``.

    Parameters
    ----------
    X, labels, block
        As :func:`silhouette`.

    Returns
    -------
    float
        The mean silhouette with squared Euclidean distances, in [-1, 1].

    References
    ----------
    Rousseeuw (1987); T. Mickus, S.-A. Grönroos, J. Attieh. *Isotropy, Clusters,
    and Classifiers*. ACL 2024.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import silhouette_sqeuclidean
    >>> X = torch.tensor([[0., 0.], [0., 1.], [10., 0.], [10., 1.]])
    >>> round(silhouette_sqeuclidean(X, [0, 0, 1, 1]), 4)  # a = 1, b = (100 + 101) / 2 = 100.5: 1 - a / b
    0.99"""
    x, clusters = _checked(X, labels, block)
    return float(silhouette_sqeuclidean_tensor(x, clusters, block=block))


__all__ = ["silhouette", "silhouette_tensor", "silhouette_sqeuclidean", "silhouette_sqeuclidean_tensor", "silhouettes"]
