"""A layer's measures that need only sums over its points, accumulated batch by batch while the model runs (issue
"Every layer of a 1B–8B model in bounded memory", item 2): what a layer analysis that keeps only a sample of its
points (``states: sample``) measures on all of them.

Per measured layer, :class:`LayerStatistics` keeps the moments of all its points and of those past each sentence's
first position (:class:`isoflow.metrics.moments.Moments`: O(d²)) and each type's sum of unit rows (O(types × d)).
From them, :meth:`LayerStatistics.columns` gives the layer's row as :func:`isoflow.layers.measure.layer_metrics`
computes it on all the points, column for column (tested, to float64 rounding):

* ``n_points``, ``n_types``, ``s_inter`` (from the types' mean unit rows), ``isoscore``, ``cosine_anisotropy``;
* the outlier dimensions (``outlier_count``, ``outlier_dims``, ``peak_ratio``, ``top_cosine_share``,
  ``removed_cosine_share``, from each dimension's mean |activation| and share of the mean cosine);
* the spectrum (``effective_rank``, ``participation_ratio``, ``stable_rank``, ``alpha_req``,
  ``variance_effective_rank``, ``alpha_req_li``), also without the ``outlier_remove`` largest dimensions
  (``*_removed``, with ``isoscore_removed``: the moments without those rows and columns) and without the sentences'
  first positions (``*_nofirst``);
* the S_inter curve's raw values (S_inter over the n most frequent types).

What needs the points themselves — K-means and the K decision, silhouettes, LID, TwoNN, uniformity, CKA, the PCA
views, S_intra, the centred measures and the cosines without the outlier dimensions (``cosine_anisotropy_removed``,
``s_inter_removed``: dropping coordinates changes each row's length, so its direction) — is measured on the sample.

Examples
--------
>>> import numpy as np, torch
>>> from isoflow.layers.streamed import LayerStatistics, TypeIndex
>>> x = torch.randn(40, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
>>> words = np.array(["a", "b", "c", "a"] * 10, dtype=object)
>>> index, stats = TypeIndex(), LayerStatistics(6)
>>> for rows in (slice(0, 25), slice(25, 40)):
...     stats.update(x[rows], index.codes(words[rows]), torch.arange(40)[rows] % 4 > 0)
>>> from isoflow.metrics import s_inter
>>> abs(stats.columns(index, outlier_factor=5.0, outlier_remove=1)["s_inter"] - s_inter(x, words)) < 1e-12
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..metrics import outlier_dimensions, peak_ratio, sample_rows
from ..metrics.isotropy import _unit_rows, s_inter_curve_of_sums, s_inter_of_sums
from ..metrics.moments import Moments
from .cost import FLOAT64, TYPE_BLOCK
from .measure import TABLE_SPECTRUM, type_rungs


@dataclass(frozen=True)
class SharedSample:
    """The points a run keeps: ``rows``, sorted indices into its n points — the union of its ``kmeans_samples``
    K-means samples of ``sample_cap`` points, drawn as the in-memory run draws them (seeds ``seed``, ``seed + 1``,
    ...) — and ``drawn``, each sample's rows among them; ``drawn`` None where a sample takes every point (n ≤
    ``sample_cap``: the run keeps them all, as the in-memory one does). Every layer keeps the same rows, so that
    the layers' CKA stays paired."""

    rows: np.ndarray
    drawn: tuple[torch.Tensor, ...] | None

    @classmethod
    def of(cls, n: int, settings) -> SharedSample:
        draws = [sample_rows(n, settings.sample_cap, settings.seed + s, "cpu") for s in range(settings.kmeans_samples)]
        if any(d is None for d in draws):
            return cls(np.arange(n), None)
        rows = np.unique(np.concatenate([d.numpy() for d in draws]))
        return cls(rows, tuple(torch.from_numpy(np.searchsorted(rows, d.numpy())) for d in draws))

    def in_batch(self, offset: int, size: int) -> np.ndarray:
        """The kept rows among a batch's ``size`` points starting at point ``offset``, as indices into the batch."""
        lo, hi = np.searchsorted(self.rows, [offset, offset + size])
        return self.rows[lo:hi] - offset

    def on(self, device) -> list[torch.Tensor] | None:
        return None if self.drawn is None else [d.to(device) for d in self.drawn]


class TypeIndex:
    """Each type's code, in the order of first appearance, and its count over the run's points: shared by the
    layers of one run."""

    def __init__(self):
        self.code_of: dict = {}
        self.counts: list[int] = []

    def codes(self, types) -> torch.Tensor:
        """The codes of a batch's types (new types get the next codes), counting them."""
        out = np.empty(len(types), dtype=np.int64)
        for i, t in enumerate(types):
            code = self.code_of.setdefault(t, len(self.code_of))
            if code == len(self.counts):
                self.counts.append(0)
            self.counts[code] += 1
            out[i] = code
        return torch.from_numpy(out)

    def sorted_order(self) -> np.ndarray:
        """The codes in the order of the types' sorted values: the in-memory measures' codes (np.unique), on which
        the S_inter curve breaks ties in frequency."""
        names = np.array(list(self.code_of), dtype=object)
        return np.array([self.code_of[t] for t in np.sort(names.astype(str))], dtype=np.int64)


class TypeSums:
    """Each type's sum of unit rows (float64), by code. In memory, in blocks of TYPE_BLOCK types (the first, read back
    from sums saved in one piece, of any length); or, given ``path`` (a file in the run's store folder), on disk: a
    batch reads its types' rows, adds its points and writes them back, so that a run holds one batch's types' rows at a
    time instead of every measured layer's T × d (a 1B model's 17 states over a real corpus' 5,000 types: 1.4 GB).
    Both add a batch's rows in its order with the same ``index_add_``: the same sums to the bit."""

    def __init__(self, dim: int, path: Path | None = None):
        self.dim, self.path, self.rows = int(dim), path, 0
        self.blocks: list[torch.Tensor] = []
        if path is not None:
            path.unlink(missing_ok=True)  # an interrupted encoding's: this one starts from zero
            path.touch()

    def add(self, codes: torch.Tensor, unit: torch.Tensor) -> None:
        if self.path is not None:
            self._add_on_disk(codes.cpu(), unit.cpu())
            return
        while self.rows <= int(codes.max()):
            self.blocks.append(torch.zeros(TYPE_BLOCK, self.dim, dtype=torch.float64, device=unit.device))
            self.rows += TYPE_BLOCK
        codes, start = codes.to(unit.device), 0
        for block in self.blocks:  # each block's types (the first may be a sum saved in one piece: any length)
            mine = (codes >= start) & (codes < start + len(block))
            if bool(mine.any()):
                block.index_add_(0, codes[mine] - start, unit[mine])
            start += len(block)

    def _add_on_disk(self, codes: torch.Tensor, unit: torch.Tensor) -> None:
        need = int(codes.max()) + 1
        if need > self.rows:  # new types: zero rows (the file grows sparse)
            os.truncate(self.path, need * self.dim * FLOAT64)
            self.rows = need
        seen, inverse = torch.unique(codes, return_inverse=True)
        rows = seen.numpy()
        table = np.memmap(self.path, dtype=np.float64, mode="r+", shape=(self.rows, self.dim))
        try:
            mine = torch.from_numpy(table[rows])  # a copy of the batch's types' rows
            mine.index_add_(0, inverse, unit)
            table[rows] = mine.numpy()
        finally:
            del table  # unmapped: its pages leave the process (the page cache keeps them)

    def table(self) -> torch.Tensor:
        """(types seen or more, d): each type's sum, by code (rows past the last type zero); read from disk whole."""
        if self.path is not None:
            return torch.from_numpy(np.fromfile(self.path, dtype=np.float64).reshape(self.rows, self.dim))
        return torch.cat(self.blocks) if len(self.blocks) != 1 else self.blocks[0]


class LayerStatistics:
    """One layer's running sums over a run's points (module docstring); its types' sums in memory or, given
    ``path``, in that file (:class:`TypeSums`)."""

    def __init__(self, dim: int, path: Path | None = None):
        self.dim = int(dim)
        self.all, self.later = Moments(dim), Moments(dim)
        self.types = TypeSums(dim, path)

    def __setstate__(self, state: dict) -> None:  # saved before TypeSums: the blocks, or one tensor before them
        if "types" not in state:
            sums = state.pop("type_sums", None)
            blocks = state.pop("blocks", [] if sums is None else [sums])
            state["types"] = TypeSums(state["dim"])
            state["types"].blocks, state["types"].rows = blocks, sum(len(b) for b in blocks)
        self.__dict__.update(state)

    @property
    def type_sums(self) -> torch.Tensor:
        """(types seen or more, d) float64: each type's sum of unit rows, by code (rows past the last type zero)."""
        return self.types.table()

    def update(self, points, codes: torch.Tensor, later: torch.Tensor) -> None:
        """Fold in a batch: its points (b × d), their types' codes (:meth:`TypeIndex.codes`) and which of them lie
        past their sentence's first position."""
        x = torch.as_tensor(points).to(torch.float64)
        self.all.update(x)
        later = torch.as_tensor(later, dtype=torch.bool, device=x.device)
        if bool(later.any()):
            self.later.update(x[later])
        self.types.add(codes, _unit_rows(x))

    def columns(self, types: TypeIndex, *, outlier_factor: float, outlier_remove: int) -> dict:
        """The layer's columns that sums give (module docstring), named as the layer's row names them, with
        ``profile`` (each dimension's mean |activation| and cosine share: the dims table) and ``curve`` (rows of
        n_types and raw S_inter, :func:`isoflow.layers.measure.type_rungs`) beside them."""
        table = self.type_sums
        order = torch.from_numpy(types.sorted_order()).to(table.device)
        sums = table[order]
        sizes = torch.as_tensor(types.counts, dtype=torch.float64, device=sums.device)[order]
        n_types = int(sums.shape[0])
        sizes_all = self.all.sizes()
        activation = self.all.mean_abs()
        shares = self.all.cosine_shares()
        total = float(shares.sum())
        largest = torch.argsort(activation, descending=True)
        removed = largest[:outlier_remove].tolist()
        found = outlier_dimensions(activation[None, :], outlier_factor)  # a profile is its own one-row point set
        row = {
            "n_points": float(self.all.n),
            "n_types": float(n_types),
            "s_inter": s_inter_of_sums(sums, sizes) if n_types >= 2 else float("nan"),
            "isoscore": sizes_all["isoscore"],
            "cosine_anisotropy": sizes_all["cosine_anisotropy"],
            "outlier_count": float(len(found)),
            "outlier_dims": " ".join(str(k) for k in found[:5]),
            "peak_ratio": peak_ratio(activation[None, :]),
            "top_cosine_share": float(shares.max()) / total if total else float("nan"),
            "removed_cosine_share": float(shares[removed].sum()) / total if total and removed else float("nan"),
            **{name: sizes_all[name] for name in TABLE_SPECTRUM},
        }
        if removed and len(removed) < self.dim:
            rest = self.all.without(removed).sizes()
            row.update({f"{name}_removed": rest[name] for name in ("isoscore", *TABLE_SPECTRUM)})
        else:
            row.update({f"{name}_removed": float("nan") for name in ("isoscore", *TABLE_SPECTRUM)})
        later = self.later.sizes() if self.later.n >= 2 else {}
        row.update({f"{name}_nofirst": later.get(name, float("nan")) for name in TABLE_SPECTRUM})
        rungs = type_rungs(n_types)
        raw = s_inter_curve_of_sums(sums, sizes, sizes, rungs) if rungs else []
        row["profile"] = {"mean_abs_activation": activation.cpu().numpy(), "cosine_share": shares.cpu().numpy()}
        row["curve"] = [{"n_types": n, "s_inter": v} for n, v in zip(rungs, raw)]
        return row


def with_streamed(row: dict, extra: dict, streamed: dict) -> tuple[dict, dict]:
    """A layer's row and extras as measured on its kept points, with what the sums give over all its points in their
    place (:meth:`LayerStatistics.columns`): the columns, the dims profile and the S_inter curve's raw values (its
    centred values stay the kept points', at the rungs both have; NaN at the others)."""
    streamed = dict(streamed)
    profile, curve = streamed.pop("profile"), streamed.pop("curve")
    centred = {c["n_types"]: c["s_inter_centred"] for c in extra["types"]}
    extra = {
        **extra,
        "dims": profile,
        "types": [{**c, "s_inter_centred": centred.get(c["n_types"], float("nan"))} for c in curve],
    }
    return {**row, **streamed}, extra
