"""Training and held-out examples for fine-tuning: texts (or text pairs) with integer labels.

Held-out data is the task's canonical validation split when it is at hand (GLUE's dev files, through the cache or
the mirror; never downloaded from a compute job), else a seeded, stratified split of the training data
(:func:`stratified_split`, 10 % by default), recorded in the run's settings either way.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np

from ..datasets import TaskData, build, has_dev_split, resolve_name
from ..fetch import FetchError

logger = logging.getLogger(__name__)


@dataclass
class Examples:
    """Texts (``a``, and ``b`` for pairs) and integer labels 0..k-1 of ``label_names``."""

    a: list[str]
    b: list[str] | None
    y: np.ndarray
    label_names: list[str]

    def __len__(self) -> int:
        return len(self.a)

    @property
    def pair(self) -> bool:
        return self.b is not None

    def subset(self, idx) -> Examples:
        idx = np.asarray(idx, dtype=np.int64)
        return Examples([self.a[i] for i in idx], None if self.b is None else [self.b[i] for i in idx], self.y[idx], self.label_names)


def examples_of(task: TaskData, label_names: list[str] | None = None) -> Examples:
    """A prepared task's examples; labels coded against ``label_names`` (the training split's) when given."""
    if task.multilabel:
        raise ValueError(f"{task.name}: multi-label tasks are not supported by fine-tuning (single-label classification only)")
    names = label_names or task.label_names
    unknown = sorted(set(task.examples["label"]) - set(names))
    if unknown:
        raise ValueError(f"{task.name}: labels {unknown} do not occur in the training split ({names})")
    texts = task.items["text"].astype(str).tolist()
    ex = task.examples
    a = [texts[i] for i in ex["a"]]
    b = [texts[i] for i in ex["b"]] if task.pair else None
    y = np.searchsorted(np.asarray(names), ex["label"].to_numpy()).astype(np.int64)
    return Examples(a, b, y, list(names))


def stratified_split(y: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, held-out) indices: ``fraction`` of every class held out (at least one of each class with ≥ 2
    examples), chosen by a seeded permutation; both sorted, disjoint, covering all indices."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"the held-out fraction must lie in (0, 1); got {fraction}")
    rng = np.random.default_rng(seed)
    held = []
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        n = len(members)
        take = min(max(1 if n >= 2 else 0, int(round(fraction * n))), n - 1)
        held.append(rng.permutation(members)[:take])
    held = np.sort(np.concatenate(held))
    train = np.setdiff1d(np.arange(len(y)), held)
    return train, held


def held_out(task: TaskData, name: str, train: Examples, *, fraction: float, seed: int, data_dir: str | os.PathLike,
             raw_dir=None, mirror=None) -> tuple[Examples, Examples, dict]:
    """(training examples, held-out examples, a description for the run's settings)."""
    canonical = resolve_name(name)
    if has_dev_split(canonical) if canonical.startswith("glue/") else False:
        try:
            dev = build(canonical, data_dir=data_dir, raw_dir=raw_dir, mirror=mirror, split="dev", allow_download=False, progress=False)
        except FetchError as exc:
            logger.info("%s: validation split not at hand (%s); holding out %.0f %% of the training data", canonical, exc, fraction * 100)
        else:
            ex = examples_of(dev, train.label_names)
            return train, ex, {"source": "validation split", "file": dev.sources[0]["name"], "n": len(ex)}
    tr, ho = stratified_split(train.y, fraction, seed)
    return train.subset(tr), train.subset(ho), {"source": "stratified split of the training data", "fraction": fraction, "seed": seed,
                                                 "n": len(ho)}


def check_held_out(ex: Examples, what: str = "held-out") -> None:
    if len(ex) == 0:
        raise ValueError(f"the {what} split is empty; use a larger held-out fraction or more data")
    if len(np.unique(ex.y)) < 2:
        raise ValueError(f"the {what} split holds a single class ({ex.label_names[int(ex.y[0])]}); accuracy and the silhouette need two")
