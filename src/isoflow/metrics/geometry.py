"""One entry point for every geometry metric: :func:`geometry` returns them all as a dict."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from ._validate import ArrayLike, as_points, encode_labels
from .clusters import select_clusters, subtract_cluster_means
from .intrinsic_dim import lid_mle, twonn
from .isotropy import cosine_anisotropy, isoscore, s_inter, s_intra
from .silhouette import silhouette, silhouette_sqeuclidean
from .spectrum import effective_rank, participation_ratio, stable_rank, uniformity, variance_effective_rank


def _cluster_centred_isoscore(x: torch.Tensor, **_: Any) -> dict[str, float]:
    choice = select_clusters(x)
    return {
        "cluster_k": float(choice.k),
        "cluster_centered_isoscore": isoscore(subtract_cluster_means(x, choice.labels)),
    }


# name -> (needs, function(x, labels=..., types=..., k_lid=...) -> value or dict of values)
_METRICS: dict[str, tuple[str | None, Callable[..., Any]]] = {
    "isoscore": (None, lambda x, **_: isoscore(x)),
    "cosine_anisotropy": (None, lambda x, **_: cosine_anisotropy(x)),
    "silhouette": ("labels", lambda x, labels, **_: silhouette(x, labels)),
    "silhouette_sqeuclidean": ("labels", lambda x, labels, **_: silhouette_sqeuclidean(x, labels)),
    "s_inter": ("types", lambda x, types, **_: s_inter(x, types)),
    "s_intra": ("types", lambda x, types, **_: s_intra(x, types)),
    "lid_mle": (None, lambda x, k_lid, **_: lid_mle(x, k=k_lid)),
    "twonn": (None, lambda x, **_: twonn(x)),
    "cluster_centered_isoscore": (None, _cluster_centred_isoscore),
    "participation_ratio": (None, lambda x, **_: participation_ratio(x)),
    "effective_rank": (None, lambda x, **_: effective_rank(x)),
    "variance_effective_rank": (None, lambda x, **_: variance_effective_rank(x)),
    "stable_rank": (None, lambda x, **_: stable_rank(x)),
    "uniformity": (None, lambda x, **_: uniformity(x)),
}
METRIC_NAMES: tuple[str, ...] = tuple(_METRICS)
METRIC_NEEDS: dict[str, str | None] = {name: needs for name, (needs, _) in _METRICS.items()}
# The fewest points each metric is defined on (k-means for k = 2..10 needs 11; LID needs k_lid + 1).
_MIN_POINTS = {"cluster_centered_isoscore": 11, "twonn": 3}


class MetricInputError(ValueError):
    """One metric of :func:`geometry` cannot be computed on the given points (the message says which and why)."""

    def __init__(self, metrics: list[str], reason: str):
        super().__init__(f"metric{'s' if len(metrics) > 1 else ''} {', '.join(map(repr, metrics))}: {reason}")
        self.metrics = metrics


def sample_rows(n: int, size: int | None, seed: int, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """Indices of a seeded uniform sample of ``size`` of ``n`` rows without replacement, or None if none is needed."""
    if size is None or n <= size:
        return None
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randperm(n, generator=g)[:size].sort().values.to(device)


def geometry(
    X: ArrayLike,
    labels: ArrayLike | None = None,
    types: ArrayLike | None = None,
    *,
    metrics: Iterable[str] | None = None,
    sample: int | None = 20_000,
    seed: int = 0,
    k_lid: int = 20,
) -> dict[str, float]:
    """Every geometry metric of ``X`` that its inputs allow, as ``{name: value}``.

    Always: ``isoscore``, ``cosine_anisotropy`` (exact), ``lid_mle`` (mean, k = ``k_lid``),
    ``twonn`` (linear fit, 10 % discarded), ``cluster_centered_isoscore`` and
    ``cluster_k`` (Cai et al.'s k-means with k in 2..10 chosen by silhouette), ``participation_ratio``,
    ``effective_rank`` and ``stable_rank`` (of the points as they are), ``variance_effective_rank`` (of the centred
    points' variance: Li et al.'s RankMe), ``uniformity`` (t = 2). (``alpha_req`` is not
    among them: its fitted range is the caller's choice.)
    With ``labels``: ``silhouette`` and ``silhouette_sqeuclidean``.
    With ``types`` (a type id per row): ``s_inter`` and ``s_intra``.
    ``metrics`` restricts the list (names in :data:`METRIC_NAMES`).

    When ``X`` has more than ``sample`` rows, all metrics are computed on one
    seeded uniform sample of that many rows (with the matching labels and
    types), as Mickus et al. do above 20,000 points; ``sample=None`` disables it.
    ``n_points`` and ``dim`` in the result describe the rows actually used.

    Parameters
    ----------
    X : (n_points, dim) tensor or array
        The points (any device; the result is computed on it).
    labels : sequence of length n_points, optional
        Class labels (the silhouettes).
    types : sequence of length n_points, optional
        Types (S_inter, S_intra).
    metrics : iterable of str, optional
        The metrics to compute (default: every one the inputs allow).
    sample : int or None
        Rows above which one seeded uniform sample of this many is measured.
    seed : int
        The sample's seed.
    k_lid : int
        Neighbours of the LID estimate.

    Returns
    -------
    dict of str to float
        ``{name: value}``, with ``n_points`` and ``dim``.

    References
    ----------
    Each metric's own (:func:`isoscore`, :func:`cosine_anisotropy`, :func:`lid_mle`, :func:`twonn`,
    :func:`cluster_centered`, :func:`silhouette`, :func:`s_inter`, :mod:`isoflow.metrics.spectrum`); the
    20,000-point sample: T. Mickus, S.-A. Grönroos, J. Attieh. *Isotropy, Clusters, and Classifiers*. ACL 2024.

    Examples
    --------
    >>> import torch
    >>> from isoflow.metrics import geometry
    >>> blob = torch.randn(400, 2, generator=torch.Generator().manual_seed(0))
    >>> X = torch.cat([blob + torch.tensor([8., 0.]), blob - torch.tensor([8., 0.])])
    >>> result = geometry(X, labels=[0] * 400 + [1] * 400)
    >>> {k: round(result[k], 2) for k in ("isoscore", "cluster_centered_isoscore", "silhouette")}
    {'isoscore': 0.04, 'cluster_centered_isoscore': 0.97, 'silhouette': 0.89}
    >>> int(result["cluster_k"])
    2
    """
    x = as_points(X)
    if labels is not None:
        labels = encode_labels(labels, x.shape[0], device=x.device).codes
    if types is not None:
        types = encode_labels(types, x.shape[0], device=x.device).codes
    wanted = list(METRIC_NAMES if metrics is None else metrics)
    unknown = [m for m in wanted if m not in _METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {', '.join(METRIC_NAMES)}")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 2):
        raise ValueError(f"sample must be None (all rows) or an integer >= 2; got {sample!r}")
    if isinstance(k_lid, bool) or not isinstance(k_lid, int) or k_lid < 2:
        raise ValueError(f"k_lid must be an integer >= 2; got {k_lid!r}")
    idx = sample_rows(x.shape[0], sample, seed, x.device)
    if idx is not None:
        x = x[idx]
        labels = None if labels is None else labels[idx]
        types = None if types is None else types[idx]
    given = {"labels": labels, "types": types}
    for name in wanted:
        needs = _METRICS[name][0]
        if needs is not None and given[needs] is None and metrics is not None:
            raise ValueError(f"metric {name!r} needs {needs}; pass {needs}=...")
    wanted = [m for m in wanted if _METRICS[m][0] is None or given[_METRICS[m][0]] is not None]
    n = x.shape[0]
    minimum = {m: k_lid + 1 if m == "lid_mle" else _MIN_POINTS.get(m, 2) for m in wanted}
    short = [m for m in wanted if n < minimum[m]]
    if short:  # all of them at once, before any work
        needs = "; ".join(
            f"{m} needs {minimum[m]}" + (f" (k_lid = {k_lid} neighbours)" if m == "lid_mle" else "") for m in short
        )
        raise MetricInputError(short, f"too few points ({n}): {needs}")
    out: dict[str, float] = {"n_points": float(n), "dim": float(x.shape[1])}
    for name in wanted:
        try:
            value = _METRICS[name][1](x, labels=labels, types=types, k_lid=k_lid)
        except ValueError as exc:
            raise MetricInputError([name], str(exc)) from exc
        out.update(value if isinstance(value, dict) else {name: value})
    return out


__all__ = ["geometry", "METRIC_NAMES", "METRIC_NEEDS", "MetricInputError", "sample_rows"]
