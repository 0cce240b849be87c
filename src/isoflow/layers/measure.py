"""Cai et al.'s measurements of one layer (or one static table): a dict of numbers from points and their types.

On all points (they are O(n·d)):

* ``s_inter``: mean cosine between different types, one instance per type (its exact expectation over the draw);
* ``s_intra``: mean over types with ≥ 2 instances of the mean cosine between a type's instances, at most
  ``max_per_type`` (1,000) instances per type (a seeded subset), as Cai et al.'s code;
* ``isoscore``, ``cosine_anisotropy`` (mean cosine of all distinct pairs);
* outlier dimensions (:mod:`isoflow.metrics.outliers`): ``outlier_count`` (mean |activation| ≥ ``outlier_factor`` ×
  the median dimension's), ``outlier_dims`` (the five largest, by index), ``peak_ratio``, the share of the mean cosine
  carried by the dimension that carries most (``top_cosine_share``) and by the ``outlier_remove`` largest dimensions
  (``removed_cosine_share``), and ``cosine_anisotropy_removed``, ``s_inter_removed``, ``isoscore_removed`` without
  those dimensions;
* the spectrum (:mod:`isoflow.metrics.spectrum`): ``effective_rank`` (RankMe, of the points as they are; and
  ``variance_effective_rank``, Li et al.'s RankMe of the explained variance),
  ``participation_ratio`` (of the covariance: IsoScore is (PR − 1)/(d − 1)), ``stable_rank`` and ``alpha_req`` (the
  covariance spectrum's power-law decay, fitted over its whole numerical rank; ``alpha_req_li`` over ranks 12 to 100,
  weighted 1/k, as Li et al.; empty below rank 100), each also without the
  ``outlier_remove`` largest dimensions (``*_removed``) and without the sentences' first positions (``*_nofirst``),
  so that a reader sees whose number it is;
* ``uniformity`` (Wang & Isola's, t = 2) over every pair of a seeded sample of ``pair_points`` points (the rows the
  run's layer-by-layer CKA uses), also ``uniformity_nofirst``;
* the S_inter curve (``extra["types"]``): S_inter and centred S_inter over the n most frequent types, n = 125, 250,
  500, ... and all of them (:func:`type_rungs`), since S_inter moves (up or down, by model) with the rarer types a
  sample takes in: models are compared at one n (:func:`isoflow.metrics.s_inter_by_type_count`);

on seeded samples of ≤ ``sample_cap`` (20,000) points:

* K-means for K in 2..15 (``k_max``), ``kmeans_starts`` k-means++ starts each (tolerance 1e-4, scikit-learn's), on
  ``kmeans_samples`` samples: the K decision with its spread (:mod:`isoflow.layers.kmeans`; K = 1 when the best mean
  silhouette is below ``min_silhouette``, 0.1): ``cluster_k``, ``cluster_silhouette`` (mean over the samples),
  ``cluster_silhouette_low`` / ``_high``, ``cluster_k_samples`` (each sample's own decision), ``cluster_settled``,
  ``cluster_rule_in_spread``; the same without the sentences' first tokens (``nofirst_*``; with positions only), so
  that first-token outliers and Cai's clusters are told apart;
* ``symbol_silhouette``: the silhouette of the split symbol tokens / word tokens (on the first sample);
* principal components 1-3 of the first sample: their variance shares and |ρ| with position and log frequency
  (:func:`isoflow.layers.pca.orderings`);
* ``lid_euclidean`` and ``lid_cosine``: mean k-NN MLE local intrinsic dimension with k = ``k_lid`` (100, Cai et
  al.'s), on Euclidean distances and on the same points scaled to unit length (chord distance √(2 − 2 cos), a
  monotone function of the cosine, so the neighbours are the cosine ones; plain, not squared, distances);
* ``twonn``: TwoNN intrinsic dimension (linear fit, 10 % discarded); both on the sample's distinct points
  (``lid_points`` of them: a repeated state, e.g. of a token at layer 0, would put a neighbour at distance 0);

and after subtracting from every point the mean of its cluster (all points assigned to the nearest of the first
sample's cluster means; Cai et al.'s centring): ``s_inter_centred``, ``s_intra_centred``, ``isoscore_centred``,
``cosine_anisotropy_centred`` (a point equal to its cluster's mean, e.g. alone in its cluster, has no direction
and is left out of the cosines). IsoScore is translation-invariant, so ``isoscore_centred`` is the isotropy *within*
the clusters; the mean cosine after centring is about 0 whatever the clusters' shape (centring alone does that)."""

from __future__ import annotations

import numpy as np
import torch

from ..metrics import (
    as_points,
    cosine_anisotropy,
    cosine_shares,
    covariance_spectrum_sizes,
    distinct_points,
    drop_dimensions,
    encode_labels,
    isoscore,
    knn_distances,
    lid_from_distances,
    lid_mle,
    mean_abs_activation,
    outlier_dimensions,
    peak_ratio,
    s_inter,
    s_inter_by_type_count,
    s_intra,
    sample_rows,
    spectrum_sizes,
    subtract_cluster_means,
    twonn_from_distances,
    uniformity,
)
from . import SPECTRUM, TYPE_RUNGS_FROM
from .composition import is_symbol
from .kmeans import KDecision, decide_k
from .pca import orderings
from .settings import LayerSettings
from .work import Work


def cap_per_type(types: np.ndarray, cap: int, seed: int) -> np.ndarray:
    """Indices keeping at most ``cap`` instances of each type (a seeded random subset of the larger ones), sorted."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(types))
    ranked = order[np.argsort(types[order], kind="stable")]  # by type; random order within a type
    codes = types[ranked]
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    rank = np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    return np.sort(ranked[rank < cap])


def nearest_centre(x: torch.Tensor, centres: torch.Tensor, block: int = 65536) -> torch.Tensor:
    """Index of the nearest centre (Euclidean) for every row, float64, in row blocks."""
    c = centres.to(torch.float64)
    cc = (c * c).sum(dim=1)
    out = torch.empty(x.shape[0], dtype=torch.int64, device=x.device)
    for i0 in range(0, x.shape[0], block):
        xi = x[i0 : i0 + block].to(torch.float64)
        out[i0 : i0 + block] = (cc[None, :] - 2.0 * xi @ c.T).argmin(dim=1)
    return out


def _unit(x: torch.Tensor) -> torch.Tensor:
    x64 = x.to(torch.float64)
    return x64 / torch.linalg.vector_norm(x64, dim=1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)


def _similarities(x: torch.Tensor, codes: torch.Tensor, intra: torch.Tensor, suffix: str = "") -> dict[str, float]:
    # A point equal to its cluster's mean (a singleton cluster, after centring) has no direction: the cosines leave it
    # out.
    nonzero = torch.linalg.vector_norm(x.to(torch.float64), dim=1) > 0
    if not bool(nonzero.all()):
        keep = torch.zeros_like(nonzero).index_fill_(0, intra, True) & nonzero
        intra = torch.nonzero(keep).flatten()
        xs, cs = x[nonzero], codes[nonzero]
    else:
        xs, cs = x, codes
    has_pairs = bool((torch.bincount(codes[intra]) >= 2).any())
    return {
        f"s_inter{suffix}": s_inter(xs, cs) if int(torch.unique(cs).numel()) >= 2 else float("nan"),
        f"s_intra{suffix}": s_intra(x[intra], codes[intra]) if has_pairs else float("nan"),
        f"isoscore{suffix}": isoscore(x),
        f"cosine_anisotropy{suffix}": cosine_anisotropy(xs),
    }


def _outliers(x: torch.Tensor, codes: torch.Tensor, s: LayerSettings) -> tuple[dict, dict]:
    """The outlier-dimension columns (module docstring) and, for the figure, the activation and cosine profiles."""
    activation = mean_abs_activation(x)
    shares = cosine_shares(x)
    total = float(shares.sum())
    largest = torch.argsort(activation, descending=True)
    found = outlier_dimensions(x, s.outlier_factor)
    removed = largest[: s.outlier_remove].tolist()
    row = {
        "outlier_count": float(len(found)),
        "outlier_dims": " ".join(str(k) for k in found[:5]),
        "peak_ratio": peak_ratio(x),
        "top_cosine_share": float(shares.max()) / total if total else float("nan"),
        "removed_cosine_share": float(shares[removed].sum()) / total if total and removed else float("nan"),
    }
    row.update(_spectrum(x))
    if removed and len(removed) < x.shape[1]:
        rest = drop_dimensions(x, removed)
        row.update(
            cosine_anisotropy_removed=cosine_anisotropy(rest),
            s_inter_removed=s_inter(rest, codes) if int(torch.unique(codes).numel()) >= 2 else float("nan"),
            isoscore_removed=isoscore(rest),
            **_spectrum(rest, "_removed"),
        )
    else:
        nan = ("cosine_anisotropy", "s_inter", "isoscore", *TABLE_SPECTRUM)
        row.update({f"{name}_removed": float("nan") for name in nan})
    profile = {"mean_abs_activation": activation.cpu().numpy(), "cosine_share": shares.cpu().numpy()}
    return row, profile


# The table's spectrum: the figures' (SPECTRUM) and Li et al.'s RankMe, of the explained variance (σ²), beside Garrido
# et al.'s (effective_rank, σ): both conventions, named, for the dynamics section's readings; and α-ReQ as Li et al.
# fit it (ranks 12 to 100, weighted 1/k) beside ours (the whole numerical rank, unweighted).
TABLE_SPECTRUM = (*SPECTRUM, "variance_effective_rank", "alpha_req_li")


def _spectrum(x: torch.Tensor, suffix: str = "") -> dict[str, float]:
    """The layer's spectrum (module docstring): O(n·d²) from d × d products, on all points."""
    sizes = {**spectrum_sizes(x), **covariance_spectrum_sizes(x)}  # the covariance's eigenvalues once, for both
    return {f"{name}{suffix}": value for name, value in sizes.items()}


def _uniformity(x: torch.Tensor, s: LayerSettings, suffix: str = "") -> dict[str, float]:
    """Uniformity (t = 2) of a seeded sample of ``pair_points`` rows: O(m²·d) over every pair of the sample; the rows
    :func:`pair_sample` gives, so the same as the layer-by-layer CKA's."""
    pick = pair_sample(x.shape[0], s)
    try:
        value = uniformity(x if pick is None else x[torch.as_tensor(pick, device=x.device)])
    except ValueError:  # a zero state has no direction
        value = float("nan")
    return {f"uniformity{suffix}": value}


def pair_sample(n: int, s: LayerSettings) -> np.ndarray | None:
    """The sorted indices of at most ``pair_points`` of ``n`` points (seeded: the same rows in every layer of a run),
    None for all of them: where uniformity and the layer-by-layer CKA are measured."""
    idx = sample_rows(n, s.pair_points, s.seed, "cpu")
    return None if idx is None else np.sort(idx.numpy())


def type_rungs(n_types: int) -> list[int]:
    """The numbers of types S_inter is measured over (:data:`TYPE_RUNGS_FROM` doubling, below ``n_types``, then
    ``n_types``); none below two types."""
    rungs, n = [], TYPE_RUNGS_FROM
    while n < n_types:
        rungs.append(n)
        n *= 2
    return rungs + [n_types] if n_types >= 2 else []


def _types_curve(x: torch.Tensor, centred: torch.Tensor, codes: torch.Tensor, frequency) -> list[dict]:
    """S_inter and centred S_inter over the n most frequent types for each rung (module docstring); the centred
    points' ranking is the points' own (a point equal to its cluster's mean is left out, as in ``s_inter_centred``)."""
    counts = torch.bincount(codes)[codes].cpu().numpy() if frequency is None else np.asarray(frequency)
    rungs = type_rungs(int(torch.unique(codes).numel()))
    if not rungs:
        return []
    raw = s_inter_by_type_count(x, codes, rungs, frequency=counts)
    keep = torch.linalg.vector_norm(centred, dim=1) > 0
    present = int(torch.unique(codes[keep]).numel())
    inside = [n for n in rungs if n <= present and n >= 2]
    kept = keep.cpu().numpy()
    centred_values = dict(zip(inside, s_inter_by_type_count(centred[keep], codes[keep], inside, counts[kept])))
    return [
        {"n_types": n, "s_inter": v, "s_inter_centred": centred_values.get(n, float("nan"))} for n, v in zip(rungs, raw)
    ]


def _decision_row(decision: KDecision, prefix: str = "") -> dict:
    return {
        f"{prefix}cluster_k": float(decision.k),
        f"{prefix}cluster_silhouette": decision.silhouette,
        f"{prefix}cluster_silhouette_low": decision.low,
        f"{prefix}cluster_silhouette_high": decision.high,
        f"{prefix}cluster_k_samples": " ".join(map(str, decision.sample_k)),
        f"{prefix}cluster_settled": decision.settled,
        f"{prefix}cluster_rule_in_spread": decision.rule_in_spread,
    }


def _decide(x: torch.Tensor, s: LayerSettings, extra=(), drawn=None) -> KDecision:
    return decide_k(
        x,
        range(2, s.k_max + 1),
        sample_cap=s.sample_cap,
        samples=s.kmeans_samples,
        starts=s.kmeans_starts,
        min_silhouette=s.min_silhouette,
        seed=s.seed,
        extra=extra,
        drawn=drawn,
    )


def layer_metrics(
    points,
    types,
    settings: LayerSettings = LayerSettings(),
    positions: np.ndarray | None = None,
    frequency: np.ndarray | None = None,
    drawn: list[torch.Tensor] | None = None,
    type_counts: dict | None = None,
) -> tuple[dict, dict]:
    """The measurements of one layer (see the module docstring) and what the figures and the cluster tables need:
    ``(row, extra)``, ``extra`` holding the first sample's indices and cluster labels (``sample``, ``clusters``), the
    same without first tokens (``nofirst``: indices into all points and labels, or None), the K-means silhouettes of
    every sample and K (``kmeans``: rows) and the per-dimension profiles (``dims``). A measurement the points do not
    allow (too few for K-means or LID, all neighbours at distance 0 for TwoNN) is NaN, and ``row["notes"]`` says why.

    ``points``: (n, d) tensor or array; ``types``: a type per point (strings, or ints); ``positions``: each point's
    position in its sentence (None for static vectors); ``frequency``: each point's type frequency, which ranks the
    types for the S_inter curve (``extra["types"]``: rows of n_types, s_inter, s_inter_centred; default the type's
    points here; static vectors, one point per word, give the corpus' counts).

    A run that keeps only its K-means samples' points (``states: sample``) passes them as ``points``, with ``drawn``
    (each sample's rows among them: :class:`isoflow.layers.streamed.SharedSample`) and ``type_counts`` (each type's
    count over all the run's points, for the principal components' ρ with log frequency)."""
    x = as_points(points)
    types = np.asarray(types)
    codes = encode_labels(types, x.shape[0], device=x.device).codes
    n = x.shape[0]
    s = settings
    idx = sample_rows(n, s.sample_cap, s.seed, x.device) if drawn is None else drawn[0]
    m = n if idx is None else int(idx.shape[0])
    intra = torch.as_tensor(cap_per_type(codes.cpu().numpy(), s.max_per_type, s.seed), device=x.device)
    row: dict = {"n_points": float(n), "n_types": float(int(codes.max()) + 1), "n_sample": float(m)}
    notes: list[str] = []  # what could not be measured here, and why: the cell is left empty, the rest goes on
    row.update(_similarities(x, codes, intra))
    work = Work()  # what the large parts did (isoflow.layers.work): the spectra, the K decisions, the neighbours
    with work.timed("spectrum", spectrum_products=2 * n * x.shape[1] ** 2):  # with and without outlier dimensions
        outlier_row, dims = _outliers(x, codes, s)
    row.update(outlier_row)
    row.update(_uniformity(x, s))
    shape_names = [f"{name}_nofirst" for name in (*TABLE_SPECTRUM, "uniformity")]
    row.update(dict.fromkeys(shape_names, float("nan")))
    if positions is not None and int((np.asarray(positions) > 0).sum()) >= 2:
        past_first = x[torch.as_tensor(np.flatnonzero(np.asarray(positions) > 0), device=x.device)]
        with work.timed("spectrum", spectrum_products=past_first.shape[0] * x.shape[1] ** 2):
            row.update(_spectrum(past_first, "_nofirst"))
        row.update(_uniformity(past_first, s, "_nofirst"))
    extra: dict = {"sample": idx, "clusters": torch.zeros(m, dtype=torch.int64, device=x.device), "nofirst": None}
    extra.update(kmeans=[], dims=dims, work=work.counts)

    labels = torch.zeros(n, dtype=torch.int64, device=x.device)
    unique_types, type_codes = np.unique(types.astype(str), return_inverse=True)
    symbols = np.array([is_symbol(t) for t in unique_types])[type_codes]
    nan_decision = {k: float("nan") for k in _decision_row(KDecision(1, 0.0, 0.0, 0.0, [1], False))}
    nan_decision["cluster_k_samples"] = ""
    row.update(nan_decision, symbol_silhouette=float("nan"))
    row.update({f"nofirst_{k}": v for k, v in nan_decision.items()})
    if m < s.k_max + 1:
        notes.append(f"clusters: {m} points, too few for K-means with K up to {s.k_max} (--k-max); no centring")
    else:
        with work.timed("k_decisions"):
            decision = _decide(x, s, extra=[symbols], drawn=drawn)
        work.add(decision.work)
        row.update(_decision_row(decision), symbol_silhouette=decision.extra[0])
        extra["kmeans"] += [{"subset": "all", **r} for r in decision.scores]
        extra["clusters"] = decision.labels
        if decision.k > 1:
            xs = x if idx is None else x[idx]
            present = torch.unique(decision.labels)
            sample_labels = torch.searchsorted(present, decision.labels)
            extra["clusters"] = sample_labels
            centres = torch.zeros(len(present), x.shape[1], dtype=torch.float64, device=x.device).index_add_(
                0, sample_labels, xs.to(torch.float64)
            )
            centres /= torch.bincount(sample_labels, minlength=len(present)).to(torch.float64)[:, None]
            labels = nearest_centre(x, centres)
        if positions is not None:
            later = torch.as_tensor(np.flatnonzero(np.asarray(positions) > 0), device=x.device)
            if later.numel() >= s.k_max + 1:
                with work.timed("k_decisions"):
                    other = _decide(x[later], s)
                work.add(other.work)
                row.update({f"nofirst_{k}": v for k, v in _decision_row(other).items()})
                extra["kmeans"] += [{"subset": "no first token", **r} for r in other.scores]
                chosen = later if other.sample is None else later[other.sample]
                extra["nofirst"] = (chosen, other.labels)
    centred = subtract_cluster_means(x, labels)
    row.update(_similarities(centred, codes, intra, "_centred"))
    extra["types"] = _types_curve(x, centred, codes, frequency)

    xs = x if idx is None else x[idx]
    chosen = np.arange(n) if idx is None else idx.cpu().numpy()
    frequency = type_counts or dict(zip(*np.unique(types.astype(str), return_counts=True)))
    log_frequency = np.log(np.array([frequency[t] for t in types.astype(str)[chosen]], dtype=np.float64))
    row.update(orderings(xs, None if positions is None else np.asarray(positions)[chosen], log_frequency))

    row["lid_euclidean"] = row["twonn"] = row["lid_cosine"] = float("nan")
    # The estimators need distinct points: a token state repeats wherever it depends on the token alone (the input
    # embeddings; a causal LM's sentence-initial tokens in every layer). Counted in the row, not warned about.
    distinct = distinct_points(xs, warn=False)
    row["lid_points"] = float(distinct.shape[0])
    if distinct.shape[0] < s.k_lid + 1:
        notes.append(
            f"LID, TwoNN: {distinct.shape[0]} distinct points, fewer than LID's {s.k_lid} neighbours + 1 (more "
            "--max-tokens or a smaller --k-lid)"
        )
    else:
        # two neighbour searches: Euclidean (LID and TwoNN) and cosine (LID)
        with work.timed("neighbours", neighbour_products=2 * distinct.shape[0] ** 2 * distinct.shape[1]):
            r = knn_distances(distinct, s.k_lid)
            for name, compute in (
                ("lid_euclidean", lambda: lid_from_distances(r)),
                ("twonn", lambda: twonn_from_distances(r)),
                ("lid_cosine", lambda: lid_mle(_unit(distinct), k=s.k_lid)),
            ):
                try:
                    row[name] = compute()
                except ValueError as exc:  # e.g. TwoNN on a repetitive corpus: every neighbour at distance 0
                    notes.append(f"{name}: {exc}")
    row["notes"] = "; ".join(notes)
    return row, extra
