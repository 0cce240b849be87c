"""Cai et al.'s measurements of one layer (or one static table): a dict of numbers from points and their types.

On all points (they are O(n·d)):

* ``s_inter``: mean cosine between different types, one instance per type (its exact expectation over the draw);
* ``s_intra``: mean over types with ≥ 2 instances of the mean cosine between a type's instances, at most
  ``max_per_type`` (1,000) instances per type (a seeded subset), as Cai et al.'s code;
* ``isoscore``, ``cosine_anisotropy`` (mean cosine of all distinct pairs);

on a seeded sample of ≤ ``sample_cap`` (20,000) points:

* K-means for K in 2..15 (``k_max``; one k-means++ start and tolerance 1e-4, scikit-learn's defaults), K chosen by the
  best silhouette; K = 1 when that silhouette is below ``min_silhouette`` (0.1): ``cluster_k``, ``cluster_silhouette``;
* ``lid_euclidean`` and ``lid_cosine``: mean k-NN MLE local intrinsic dimension with k = ``k_lid`` (100, Cai et
  al.'s), on Euclidean distances and on the same points scaled to unit length (chord distance √(2 − 2 cos), a
  monotone function of the cosine, so the neighbours are the cosine ones; plain, not squared, distances);
* ``twonn``: TwoNN intrinsic dimension (linear fit, 10 % discarded);

and after subtracting from every point the mean of its cluster (all points assigned to the nearest of the
sample's cluster means; Cai et al.'s centring): ``s_inter_centred``, ``s_intra_centred``, ``isoscore_centred``,
``cosine_anisotropy_centred`` (a point equal to its cluster's mean, e.g. alone in its cluster, has no direction
and is left out of the cosines)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import torch

from ..metrics import (
    as_points,
    cosine_anisotropy,
    encode_labels,
    isoscore,
    knn_distances,
    lid_from_distances,
    lid_mle,
    s_inter,
    s_intra,
    sample_rows,
    select_clusters,
    subtract_cluster_means,
    twonn_from_distances,
)
from .settings import LayerSettings  # noqa: F401  (re-exported)


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


def layer_metrics(points, types, settings: LayerSettings = LayerSettings()) -> tuple[dict, dict]:
    """The measurements of one layer (see the module docstring) and, for the figures, the sample's indices and
    cluster labels: ``(row, {"sample": indices, "clusters": labels})``. A measurement the points do not allow (too
    few for K-means or LID, all neighbours at distance 0 for TwoNN) is NaN, and ``row["notes"]`` says why.

    ``points``: (n, d) tensor or array; ``types``: a type id per point (strings or ints)."""
    x = as_points(points)
    codes = encode_labels(np.asarray(types), x.shape[0], device=x.device).codes
    n = x.shape[0]
    s = settings
    idx = sample_rows(n, s.sample_cap, s.seed, x.device)
    xs = x if idx is None else x[idx]
    m = xs.shape[0]
    intra = torch.as_tensor(cap_per_type(codes.cpu().numpy(), s.max_per_type, s.seed), device=x.device)
    row: dict = {"n_points": float(n), "n_types": float(int(codes.max()) + 1), "n_sample": float(m)}
    notes: list[str] = []  # what could not be measured here, and why: the cell is left empty, the rest goes on
    row.update(_similarities(x, codes, intra))

    sample_labels = torch.zeros(m, dtype=torch.int64, device=x.device)
    labels = torch.zeros(n, dtype=torch.int64, device=x.device)
    row["cluster_k"] = row["cluster_silhouette"] = float("nan")
    if m < s.k_max + 1:
        notes.append(f"clusters: {m} points, too few for K-means with K up to {s.k_max} (--k-max); no centring")
    else:
        choice = select_clusters(
            xs, range(2, s.k_max + 1), min_silhouette=s.min_silhouette, seed=s.seed, n_init=1, tol=1e-4, max_iter=300
        )
        row["cluster_k"] = float(choice.k)
        row["cluster_silhouette"] = max(choice.silhouettes.values()) if choice.silhouettes else float("nan")
        if choice.k > 1:
            present = torch.unique(choice.labels)
            sample_labels = torch.searchsorted(present, choice.labels)
            centres = torch.zeros(len(present), x.shape[1], dtype=torch.float64, device=x.device).index_add_(
                0, sample_labels, xs.to(torch.float64)
            )
            centres /= torch.bincount(sample_labels, minlength=len(present)).to(torch.float64)[:, None]
            labels = nearest_centre(x, centres)
    row.update(_similarities(subtract_cluster_means(x, labels), codes, intra, "_centred"))

    row["lid_euclidean"] = row["twonn"] = row["lid_cosine"] = float("nan")
    if m < s.k_lid + 1:
        notes.append(
            f"LID, TwoNN: {m} points, fewer than LID's {s.k_lid} neighbours + 1 (more --max-tokens or a "
            "smaller --k-lid)"
        )
    else:
        r = knn_distances(xs, s.k_lid)  # one neighbour search for LID and TwoNN
        for name, compute in (
            ("lid_euclidean", lambda: lid_from_distances(r)),
            ("twonn", lambda: twonn_from_distances(r)),
            ("lid_cosine", lambda: lid_mle(_unit(xs), k=s.k_lid)),
        ):
            try:
                row[name] = compute()
            except ValueError as exc:  # e.g. TwoNN on a repetitive corpus: every neighbour at distance 0
                notes.append(f"{name}: {exc}")
    row["notes"] = "; ".join(notes)
    return row, {"sample": idx, "clusters": sample_labels}


_PIECE_MARKS = ("##", "Ġ", "▁", "Ċ")


def is_symbol(token: str) -> bool:
    """Whether a type is a symbol (punctuation, brackets, quotes: no letter or digit once the tokenizer's word-piece
    marks ``##``, ``Ġ``, ``▁`` are removed), as Cai et al. split "symbol" from "word" tokens."""
    core = str(token)
    for mark in _PIECE_MARKS:
        core = core.replace(mark, "")
    return bool(core) and not any(ch.isalnum() for ch in core)


def cluster_composition(
    clusters: torch.Tensor, types: np.ndarray, positions: np.ndarray | None, *, top: int = 8
) -> list[dict]:
    """What each cluster of a sample holds: its size and share of the sample, the share of symbol tokens and of
    first tokens (position 0) in it, its mean position (NaN without positions: static vectors), and its most frequent
    types (``top`` of them, with counts)."""
    labels = clusters.cpu().numpy()
    symbols = np.array([is_symbol(t) for t in types])
    rows = []
    for c in np.unique(labels):
        members = labels == c
        counts = Counter(np.asarray(types, dtype=object)[members].tolist()).most_common(top)
        rows.append(
            {
                "cluster": int(c),
                "size": int(members.sum()),
                "share": float(members.mean()),
                "share_symbols": float(symbols[members].mean()),
                "share_first_position": float((positions[members] == 0).mean())
                if positions is not None
                else float("nan"),
                "mean_position": float(positions[members].mean()) if positions is not None else float("nan"),
                "top_types": " ".join(f"{t}({n})" for t, n in counts),
            }
        )
    return rows


def pca_view(
    points: torch.Tensor,
    clusters: torch.Tensor,
    types: np.ndarray,
    frequency: np.ndarray,
    positions: np.ndarray | None = None,
    *,
    max_points: int = 5000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Three principal components of (a seeded sample of) the points, with cluster, type, type frequency, whether the
    type is a symbol and the point's position in its sentence: the data of the 2-D and 3-D views (Cai et al.'s
    cluster, "Swiss roll", frequency and symbol/word pictures)."""
    n = points.shape[0]
    idx = sample_rows(n, max_points, seed + 1)
    idx = torch.arange(n) if idx is None else idx.cpu()
    x = points[idx.to(points.device)].to(torch.float64)
    x = x - x.mean(dim=0, keepdim=True)
    _, _, vt = torch.linalg.svd(x, full_matrices=False)
    pcs = (x @ vt[:3].T).cpu().numpy()
    chosen = np.asarray(types)[idx.numpy()]
    view = {
        "pc1": pcs[:, 0],
        "pc2": pcs[:, 1],
        "pc3": pcs[:, 2],
        "cluster": clusters.cpu().numpy()[idx.numpy()],
        "type": chosen,
        "frequency": np.asarray(frequency)[idx.numpy()],
        "symbol": np.array([is_symbol(t) for t in chosen]),
    }
    if positions is not None:
        view["position"] = np.asarray(positions)[idx.numpy()]
    return view
