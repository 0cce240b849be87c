"""The optimisation experiment of Mickus, Grönroos & Attieh (2024), Section 3 and Appendix A.

The embedding table itself (one row per distinct sentence or word) becomes a
trainable parameter, together with one linear layer (d → k for single items,
2d → k on the concatenation [u; v] for pairs, with bias). Full-batch Adam
(lr 1e-3, betas (0.9, 0.999)) minimises cross-entropy (single-label tasks) or
per-label binary cross-entropy with logits (multi-label tasks).

At every recorded state — the initial one (step 0) and after each update
(steps 1..N) — the loop records, on the current parameters and on the
optimisation device:

* ``silhouette``: Euclidean silhouette of the classified representations (items,
  or concatenated pairs) w.r.t. their labels, each distinct label vector one
  cluster;
* ``isoscore``: IsoScore of the (unpaired) embedding table;
* ``loss`` and ``accuracy`` (multi-label: exact match of the predicted label set);
* ``isoscore_star``: IsoScore*_ζ of the table (Σ_S: the pretrained table's covariance), and
  ``istar_penalty`` = λ·(1 − IsoScore*), the I-STAR term (0 for plain runs, λ = 0).

Optionally, every ``label_centred_every`` states (NaN in between), on the classified points (the silhouette's):
``isoscore_classified`` (their global IsoScore), ``isoscore_label_centred`` (after subtracting each label
cluster's mean: Cai et al.'s cluster-centring, with the classes as clusters) and ``s_intra_label`` (mean cosine
between points of one class).

With a non-linear head (``head: mlp``), at the updates ``hidden_updates`` chooses (NaN in between), on the
silhouette's sample: ``silhouette_hidden`` and ``isoscore_hidden`` of its last hidden layer's output, the
representation its final linear layer separates.

With ``istar_lambda`` λ ≠ 0 the loss is task loss + λ·(1 − IsoScore*_ζ(table)) (see
:mod:`isoflow.istar`); ``loss`` records the task loss alone, so that runs with different λ compare.

A set with more than ``sample_cap`` (20,000) rows is measured on a fresh random
sample of that size at every state, drawn from a generator seeded by the run's
seed. All per-state values stay on the device until one transfer per state.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from .. import interrupt
from ..datasets.table import TaskData
from ..istar import IStarLoss
from ..metrics import (
    device_policy,
    encode_labels,
    isoscore_and_star_tensor,
    isoscore_tensor,
    s_intra,
    silhouette_tensor,
    subtract_cluster_means,
)
from ..metrics._validate import distance_dtype
from ..metrics.geometry import geometry
from ..progress import progress_bar
from .settings import Settings, check_settings, hidden_steps  # noqa: F401  (re-exported)

logger = logging.getLogger(__name__)

RECORDED = ("loss", "accuracy", "silhouette", "isoscore", "isoscore_star", "istar_penalty")


class OptimizationError(RuntimeError):
    """The optimisation could not run or diverged (the message gives the step)."""


@dataclass
class Trajectory:
    settings: Settings
    records: dict[str, np.ndarray]  # column -> values per recorded state (step 0..N)
    info: dict = field(default_factory=dict)

    def frame(self):
        import pandas as pd

        df = pd.DataFrame({"step": np.arange(len(self.records["loss"]))} | self.records)
        df.insert(0, "seed", self.settings.seed)
        df.insert(0, "model", self.settings.model)
        df.insert(0, "task", self.settings.task)
        return df


def classifier(in_dim: int, n_labels: int, s: Settings) -> torch.nn.Module:
    """The paper's linear layer (d → k; pairs 2d → k), or, to ask whether its reasoning holds for deep classifiers
    (its Limitations), ``head_layers`` hidden layers as wide as the input, each followed by GELU, then d → k."""
    if s.head == "linear":
        return torch.nn.Linear(in_dim, n_labels)
    hidden = [m for _ in range(s.head_layers) for m in (torch.nn.Linear(in_dim, in_dim), torch.nn.GELU())]
    return torch.nn.Sequential(*hidden, torch.nn.Linear(in_dim, n_labels))


class _Problem:
    """Tensors of one task on one device: the table, example indices, targets, clusters."""

    def __init__(self, task: TaskData, embeddings: np.ndarray, device: torch.device):
        ex = task.examples
        n_items = len(task.items)
        if embeddings.shape[0] != n_items:
            raise OptimizationError(
                f"{task.name}: the embedding table has {embeddings.shape[0]} rows but the task has {n_items} items; "
                f"re-run `isoflow encode`"
            )
        idx_cols = ["a", "b"] if task.pair else ["a"]
        idx = torch.as_tensor(np.array(ex[idx_cols], dtype=np.int64), device=device)
        if int(idx.min()) < 0 or int(idx.max()) >= n_items:
            raise OptimizationError(
                f"{task.name}: examples reference item {int(idx.max())} but the table has {n_items} items (a pair "
                f"points to a missing sentence)"
            )
        self.a = idx[:, 0]
        self.b = idx[:, 1] if task.pair else None
        self.labels = task.label_names
        if len(self.labels) < 2:
            raise OptimizationError(
                f"{task.name}: a single label ({self.labels}); classification needs at least two classes"
            )
        self.multilabel = task.multilabel
        if self.multilabel:
            pos = {lab: i for i, lab in enumerate(self.labels)}
            y = np.zeros((len(ex), len(self.labels)), dtype=np.float32)
            for r, labs in enumerate(ex["labels"]):
                y[r, [pos[x] for x in labs]] = 1.0
            self.y = torch.as_tensor(y, device=device)
            self.clusters = encode_labels(self.y, device=device)
        else:
            codes = np.searchsorted(np.asarray(self.labels), ex["label"].to_numpy())
            self.y = torch.as_tensor(codes, dtype=torch.int64, device=device)
            self.clusters = encode_labels(self.y, device=device)
        self.n_examples = len(ex)
        self.table0 = torch.as_tensor(np.ascontiguousarray(embeddings, dtype=np.float32), device=device)
        if not bool(torch.isfinite(self.table0).all()):
            raise OptimizationError(
                f"{task.name}: the embedding table contains NaN/inf values; re-run `isoflow encode --force`"
            )
        if len(self.table0) > 1 and bool((self.table0 == self.table0[0]).all()):
            raise OptimizationError(
                f"{task.name}: all {len(self.table0)} rows of the embedding table are identical (a tokenizer that maps "
                "every word to its unknown token gives this); nothing to measure: check the model or the vectors"
            )
        try:  # one absurdly long row (corrupt embeddings) would make every distance among the others meaningless
            self.measure_dtype = distance_dtype(self.table0, name=f"{task.name}: the embedding table")
        except ValueError as exc:
            raise OptimizationError(f"{exc}; re-run `isoflow encode --force`") from exc

        # Single-item tasks whose examples are the items in order (polarity, word tasks) need no gather.
        self.identity = (
            self.b is None
            and self.a.shape[0] == n_items
            and bool((self.a == torch.arange(n_items, device=device)).all())
        )

    def represent(self, table: torch.Tensor) -> torch.Tensor:
        # index_select's backward is an index_add, much cheaper than the accumulating index_put of table[a].
        if self.identity:
            return table
        if self.b is None:
            return table.index_select(0, self.a)
        return torch.cat([table.index_select(0, self.a), table.index_select(0, self.b)], dim=1)


def _loss_and_accuracy(logits: torch.Tensor, p: _Problem) -> tuple[torch.Tensor, torch.Tensor]:
    if p.multilabel:
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, p.y)
        acc = ((logits > 0) == (p.y > 0.5)).all(dim=1).float().mean()
    else:
        loss = torch.nn.functional.cross_entropy(logits, p.y)
        acc = (logits.argmax(dim=1) == p.y).float().mean()
    return loss, acc


def _sample(n: int, cap: int, gen: torch.Generator, device: torch.device) -> torch.Tensor | None:
    if n <= cap:
        return None
    return torch.randperm(n, generator=gen, device=gen.device)[:cap].to(device)


class Diverged(OptimizationError):
    """NaN/inf at some step; carries the trajectory recorded up to the step before."""

    def __init__(self, message: str, step: int, trajectory: Trajectory):
        super().__init__(message)
        self.step = step
        self.trajectory = trajectory


def optimize(
    task: TaskData,
    embeddings: np.ndarray,
    settings: Settings,
    *,
    device: torch.device | str = "cpu",
    progress: bool | None = None,
    callback: Callable[[int, dict[str, float]], None] | None = None,
    shrinkage_matrix=None,
) -> Trajectory:
    """Run the experiment; returns the trajectory of every recorded state (steps 0..N).

    ``callback(step, values)``, if given, is called after each recorded state (before the next update) with the
    recorded values, e.g. to log, or to stop a run from a test at a chosen step by raising.
    ``shrinkage_matrix``: an explicit Σ_S (d × d) for IsoScore*, instead of the one ``settings.shrinkage`` names.
    A NaN/inf raises :class:`Diverged` (an :class:`OptimizationError`) naming the step.
    """
    device = torch.device(device)
    t_setup = time.perf_counter()
    p = _Problem(task, embeddings, device)
    s = settings
    istar = _istar_loss(s, p, shrinkage_matrix, device)
    table, head, opt = _trained(p, s, device)
    gen = torch.Generator(device=device).manual_seed(s.seed)  # the per-state samples
    n_params = table.numel() + sum(q.numel() for q in head.parameters())
    rows: list[np.ndarray] = []
    extra: dict[str, dict[int, float]] = {}
    label = f"{s.task} x {s.model} seed {s.seed}" + (f" λ={s.istar_lambda:g}" if istar.active else "")
    bar = progress_bar(progress, s.steps, label, "upd")
    hidden_at = hidden_steps(s.steps, s.hidden_updates)
    t_loop = time.perf_counter()
    try:
        for step in range(s.steps + 1):
            state = _State(step, table, head, p, s, gen, istar, device)
            if state.hidden is not None and step in hidden_at:
                _hidden_metrics(state.hidden.detach(), p, s, state.sil_pick, extra, step)
            vals = state.values.cpu().numpy()  # the one host transfer of this state
            if not np.isfinite(vals).all():
                trajectory = _trajectory(s, rows, extra, p, n_params, istar, device, t_setup, t_loop)
                raise Diverged(_diverged(s, istar, vals, step), step, trajectory)
            rows.append(vals)
            if callback is not None:
                callback(step, dict(zip(RECORDED, map(float, vals))))
            interrupt.check()  # a Ctrl-C swallowed on the way (e.g. inside a finaliser) still stops the run
            state.every_so_often(table, p, s, extra)
            if bar is not None:  # this update's values (already on the host), shown with the count they belong to
                bar.set_postfix(loss=f"{vals[0]:.4f}", sil=f"{vals[2]:.4f}", iso=f"{vals[3]:.4f}", refresh=False)
                if step:
                    bar.update(1)
            if step == s.steps:
                break
            opt.zero_grad(set_to_none=True)
            state.objective.backward()
            opt.step()
    finally:
        if bar is not None:
            bar.close()
    return _trajectory(s, rows, extra, p, n_params, istar, device, t_setup, t_loop)


def _trained(p: _Problem, s: Settings, device) -> tuple:
    """What the updates train, seeded: the table (a copy of the pretrained one), the head, and Adam over both."""
    torch.manual_seed(s.seed)
    table = torch.nn.Parameter(p.table0.clone())
    in_dim = table.shape[1] * (1 if p.b is None else 2)
    head = classifier(in_dim, len(p.labels), s).to(device)  # seeded init (PyTorch's default uniform)
    return table, head, torch.optim.Adam([table, *head.parameters()], lr=s.lr, betas=s.betas)


def _istar_loss(s: Settings, p: _Problem, shrinkage_matrix, device) -> IStarLoss:
    """The run's I-STAR penalty: Σ_S from the pretrained table as ``s.shrinkage`` names it, or the one given."""
    if shrinkage_matrix is None:
        return IStarLoss.from_points(s.istar_lambda, s.zeta, p.table0, s.shrinkage, s.penalty_dtype)
    return IStarLoss.from_matrix(s.istar_lambda, s.zeta, shrinkage_matrix, p.table0.shape[1], s.penalty_dtype, device)


class _State:
    """One recorded state of the table and head: its samples, representations, recorded values (:data:`RECORDED`,
    still on the device) and the objective the next update descends."""

    def __init__(self, step, table, head, p: _Problem, s: Settings, gen, istar: IStarLoss, device):
        # The samples of this state, drawn in a fixed order (silhouette, then IsoScore) before anything else:
        # the penalty is computed on the same rows IsoScore is measured on.
        self.sil_pick = _sample(p.n_examples, s.sample_cap, gen, device)
        iso_pick = _sample(p.table0.shape[0], s.sample_cap, gen, device)
        self.reps = reps = p.represent(table)
        # A non-linear head: its last hidden layer's output is what the final linear layer separates (Mickus et
        # al.'s argument is about the representation a linear classifier acts on): measured too.
        self.hidden = head[:-1](reps) if isinstance(head, torch.nn.Sequential) else None
        loss, acc = _loss_and_accuracy(head(reps) if self.hidden is None else head[-1](self.hidden), p)
        with torch.no_grad():
            sil, iso, iso_star, cov = _geometry_now(reps.detach(), table.detach(), p, s, self.sil_pick, iso_pick, istar)
            penalty = istar.istar_lambda * (1.0 - iso_star)
            self.values = torch.stack([loss.detach().double(), acc.double(), sil, iso, iso_star, penalty])
        self.objective = loss
        if istar.active:  # on the rows IsoScore was measured on, reusing the covariance it was measured with
            self.objective = loss + istar.penalty_given_covariance(table if iso_pick is None else table[iso_pick], cov)
        self.step = step

    def every_so_often(self, table, p: _Problem, s: Settings, extra: dict) -> None:
        """The metrics recorded every ``extra_every`` and every ``label_centred_every`` states, into ``extra``."""
        if s.extra_every and self.step % s.extra_every == 0:
            _extra_metrics(table, s, extra, self.step)
        if s.label_centred_every and self.step % s.label_centred_every == 0:
            _label_centred_metrics(self.reps.detach(), p, self.sil_pick, extra, self.step)


def _diverged(s: Settings, istar: IStarLoss, vals: np.ndarray, step: int) -> str:
    bad = [n for n, v in zip(RECORDED, vals) if not math.isfinite(v)]
    named = f" lambda {s.istar_lambda:g}" if istar.active else ""
    return f"{s.task} x {s.model} seed {s.seed}{named}: {', '.join(bad)} became NaN/inf at step {step} (diverged)"


def _trajectory(
    s: Settings, rows, extra, p: _Problem, n_params: int, istar: IStarLoss, device, t_setup: float, t_loop: float
) -> Trajectory:
    loop_seconds = time.perf_counter() - t_loop
    arr = np.stack(rows) if rows else np.empty((0, len(RECORDED)))
    records = {name: arr[:, i].astype(np.float64) for i, name in enumerate(RECORDED)}
    for name, by_step in extra.items():  # NaN where the extra metrics were not computed
        col = np.full(len(rows), np.nan)
        col[list(by_step)] = list(by_step.values())
        records[name] = col
    info = {
        "device": str(device),
        "n_items": int(p.table0.shape[0]),
        "n_examples": p.n_examples,
        "dim": int(p.table0.shape[1]),
        "n_labels": len(p.labels),
        "labels": p.labels,
        "multilabel": p.multilabel,
        "pair": p.b is not None,
        "n_clusters": p.clusters.k,
        "measure_dtype": str(p.measure_dtype).replace("torch.", ""),
        **device_policy.describe(device),
        "n_params": int(n_params),
        "shrinkage_trace": None if istar.reference is None else float(torch.trace(istar.reference)),
        "setup_seconds": round(t_loop - t_setup, 3),
        "loop_seconds": round(loop_seconds, 3),
        "seconds_per_update": round(loop_seconds / max(len(rows) - 1, 1), 5),
    }
    return Trajectory(s, records, info)


def _geometry_now(
    reps, tab, p: _Problem, s: Settings, sil_pick, iso_pick, istar: IStarLoss
) -> tuple[torch.Tensor, ...]:
    """Silhouette of the classified representations; IsoScore and IsoScore* of the table; each on ≤ sample_cap rows."""
    clusters = p.clusters
    reps = reps.to(p.measure_dtype)  # float64 only for tables whose row lengths span over 2**10 (see distance_dtype)
    if sil_pick is not None:
        reps, clusters = reps[sil_pick], clusters.subset(sil_pick)
    sil = silhouette_tensor(reps, clusters, block=s.block or None)
    iso, iso_star, cov = isoscore_and_star_tensor(
        tab if iso_pick is None else tab[iso_pick], istar.shrinkage(tab.shape[1], tab.device), istar.zeta
    )
    return sil, iso, iso_star, cov


def _hidden_metrics(hidden: torch.Tensor, p: _Problem, s: Settings, pick, out: dict[str, dict[int, float]], step: int):
    """The non-linear head's last hidden output, on the silhouette's sample: its silhouette w.r.t. the labels and its
    IsoScore (``silhouette_hidden``, ``isoscore_hidden``)."""
    clusters = p.clusters
    h = hidden.to(p.measure_dtype)
    if pick is not None:
        h, clusters = h[pick], clusters.subset(pick)
    out.setdefault("silhouette_hidden", {})[step] = float(silhouette_tensor(h, clusters, block=s.block or None))
    out.setdefault("isoscore_hidden", {})[step] = float(isoscore_tensor(h))


def _extra_metrics(table, s: Settings, out: dict[str, dict[int, float]], step: int) -> None:
    values = geometry(table.detach(), metrics=list(s.extra_metrics), sample=s.sample_cap, seed=s.seed + step)
    for k, v in values.items():
        if k not in ("n_points", "dim"):
            out.setdefault(k, {})[step] = v


def _label_centred_metrics(reps: torch.Tensor, p: _Problem, pick, out: dict[str, dict[int, float]], step: int) -> None:
    """The bridge to Cai et al.: on the classified points (the silhouette's, same sample), the global IsoScore, the
    IsoScore after subtracting each label cluster's mean, and S_intra within label clusters (cosine between points
    of one class)."""
    clusters = p.clusters
    if pick is not None:
        reps, clusters = reps[pick], clusters.subset(pick)
    values = {
        "isoscore_classified": float(isoscore_tensor(reps)),
        "isoscore_label_centred": float(isoscore_tensor(subtract_cluster_means(reps, clusters.codes))),
        "s_intra_label": s_intra(reps, clusters.codes),
    }
    for k, v in values.items():
        out.setdefault(k, {})[step] = v


def settings_dict(s: Settings) -> dict:
    d = asdict(s)
    d["betas"] = list(s.betas)
    d["extra_metrics"] = list(s.extra_metrics)
    return d
