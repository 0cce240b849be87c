"""Cai et al.'s K decision with its spread: K-means for K = 2..K_MAX on several samples of a layer's points.

Cai et al. ran K-means once per K on one 20,000-point sample and kept the K of the best silhouette, or K = 1 when that
silhouette is below 0.1. One draw hides how fragile the decision is. Here, for each of ``samples`` seeded samples of
at most ``sample_cap`` points, K-means keeps the best inertia of ``starts`` k-means++ starts for every K, and the
silhouettes of all K (and of any extra labelling, e.g. symbols against words) come from one pass over the sample's
distances (:func:`isoflow.metrics.silhouettes`). Then:

* the pooled decision: K* = the K of the best mean silhouette over the samples; K = 1 if that mean is below the rule;
* its spread: the lowest and highest silhouette of K* over the samples;
* each sample's own decision under the rule, and whether they all agree (``settled``);
* whether the rule's threshold lies within the spread (``rule_in_spread``): the decision K > 1 or K = 1 then rests on
  which sample was drawn.

With fewer points than ``sample_cap`` every sample is the whole set, and the spread is that of the K-means starts.
K-means runs in float32 (as scikit-learn does for float32 points; twice as fast as float64 on a CPU), the silhouettes
reduce in float64.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..metrics import kmeans, sample_rows, silhouettes


@dataclass
class KDecision:
    """The outcome of :func:`decide_k` (see the module docstring)."""

    k: int
    silhouette: float  # mean over the samples of K*'s silhouette (NaN: no K tried)
    low: float
    high: float
    sample_k: list[int]
    rule_in_spread: bool
    scores: list[dict] = field(default_factory=list)  # rows: sample, k, silhouette
    extra: list[float] = field(default_factory=list)  # the extra labellings' silhouettes on the first sample
    sample: torch.Tensor | None = None  # the first sample's indices (None: all points)
    labels: torch.Tensor | None = None  # the first sample's labels at K (zeros when K = 1)
    # the arithmetic it did (what its time is counted by): the Lloyd iterations of every start, the point-centre
    # multiply-adds of K-means (m·k·d a pass: k-means++'s, each iteration's and the labels'), the silhouettes' m²·d
    work: dict = field(default_factory=dict)

    @property
    def settled(self) -> bool:
        return len(set(self.sample_k)) == 1


def decide_k(
    x: torch.Tensor,
    k_values,
    *,
    sample_cap: int,
    samples: int = 3,
    starts: int = 5,
    min_silhouette: float = 0.1,
    seed: int = 0,
    extra=(),
    drawn=None,
) -> KDecision:
    """K-means' K for the points ``x`` with its spread over ``samples`` samples (module docstring). ``extra``: label
    vectors over all points whose silhouettes are wanted on the first sample (they share its distance pass).
    ``drawn``: the samples' rows in ``x``, drawn before (a run that keeps only its samples' points:
    :class:`isoflow.layers.streamed.SharedSample`); by default each is drawn here, seeded ``seed + s``."""
    k_values = list(k_values)
    per_sample: list[dict[int, float]] = []
    first_labels: dict[int, torch.Tensor] = {}
    extra_scores = [float("nan")] * len(extra)
    first_index = None
    work = {"lloyd_iterations": 0, "kmeans_products": 0, "silhouette_products": 0}
    for s in range(samples):
        idx = sample_rows(x.shape[0], sample_cap, seed + s, x.device) if drawn is None else drawn[s]
        xs = x if idx is None else x[idx]
        labelings = {}
        for k in k_values:
            iterations: list[int] = []
            labelings[k] = kmeans(
                xs, k, n_init=starts, seed=seed + s, tol=1e-4, dtype=torch.float32, iterations=iterations
            )[0]
            work["lloyd_iterations"] += sum(iterations)
            work["kmeans_products"] += (sum(iterations) + 2 * len(iterations)) * xs.shape[0] * k * xs.shape[1]
        usable = {k: lab for k, lab in labelings.items() if int(torch.unique(lab).numel()) >= 2}  # not collapsed
        extras = {}
        if s == 0:  # the extra labellings on the first sample, where they have two groups at least
            for i, e in enumerate(extra):
                e = np.asarray(e) if idx is None else np.asarray(e)[idx.cpu().numpy()]
                if len(np.unique(e)) >= 2:
                    extras[i] = e
        values = silhouettes(xs, [*usable.values(), *extras.values()])
        work["silhouette_products"] += xs.shape[0] ** 2 * xs.shape[1]  # one pass over the sample's distances
        per_sample.append(dict(zip(usable, values[: len(usable)])))
        if s == 0:
            first_labels, first_index = usable, idx
            for i, v in zip(extras, values[len(usable) :]):
                extra_scores[i] = v
    scores = [{"sample": s, "k": k, "silhouette": v} for s, row in enumerate(per_sample) for k, v in row.items()]
    decision = summarise(per_sample, k_values, min_silhouette)
    none = torch.zeros(_n(x, first_index), dtype=torch.int64, device=x.device)
    decision.scores, decision.extra, decision.sample, decision.work = scores, extra_scores, first_index, work
    decision.labels = first_labels[decision.k] if decision.k > 1 else none
    return decision


def summarise(per_sample: list[dict[int, float]], k_values, min_silhouette: float = 0.1) -> KDecision:
    """The decision from the silhouettes of every K on every sample (``per_sample[s][k]``; a K missing from a sample:
    K-means collapsed there): see the module docstring.

    >>> d = summarise([{2: 0.12, 3: 0.05}, {2: 0.08, 3: 0.06}, {2: 0.13, 3: 0.30}], [2, 3])
    >>> d.k, round(d.silhouette, 4), d.low, d.high, d.sample_k, d.settled, d.rule_in_spread
    (3, 0.1367, 0.05, 0.3, [2, 1, 3], False, True)"""
    common = [k for k in k_values if all(k in row for row in per_sample)]
    if not common:
        nan = float("nan")
        return KDecision(1, nan, nan, nan, [1] * len(per_sample), False)
    means = {k: float(np.mean([row[k] for row in per_sample])) for k in common}
    best = max(common, key=lambda k: means[k])
    values = [row[best] for row in per_sample]
    low, high = float(min(values)), float(max(values))
    return KDecision(
        k=best if means[best] >= min_silhouette else 1,
        silhouette=means[best],
        low=low,
        high=high,
        sample_k=[_own_decision(row, min_silhouette) for row in per_sample],
        rule_in_spread=low <= min_silhouette <= high,
    )


def _n(x: torch.Tensor, index: torch.Tensor | None) -> int:
    return x.shape[0] if index is None else int(index.shape[0])


def _own_decision(row: dict[int, float], min_silhouette: float) -> int:
    if not row:
        return 1
    k = max(row, key=row.get)
    return k if row[k] >= min_silhouette else 1
