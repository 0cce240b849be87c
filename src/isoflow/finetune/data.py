"""Training and held-out examples for fine-tuning: texts (or text pairs) with integer labels.

The held-out set is the same for every seed and weight, so that runs compare in pairs:

* the task's canonical validation split when it is at hand (GLUE's dev files through the cache or the mirror, never
  downloaded from a compute job; MRPC's 408 dev pairs are built from the MSR file and GLUE's dev ids);
* otherwise a fixed, stratified split of the training data (seed :data:`SPLIT_SEED`, not the run's). For SST-2,
  whose training items are phrases cut from the parse trees of sentences, the held-out items are drawn from the
  *maximal* phrases (those inside no other phrase: the sentences), and every training phrase that is a word
  sequence inside a held-out item, or contains one, is dropped and counted: no held-out sentence is seen in pieces.

A training subset (``max_train``) is a fixed stratified subset too, so seeds vary only the initialisation and the
batch order. Which held-out data was used, and what was dropped, is in the run's record.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np

from ..datasets import TaskData, build, has_dev_split, resolve_name
from ..fetch import FetchError

logger = logging.getLogger(__name__)

SPLIT_SEED = 0  # the held-out split and the training subset are the same for every run
PHRASE_TASKS = ("glue/sst2",)  # training items are phrases of the held-out sentences' parse trees


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
        return Examples(
            [self.a[i] for i in idx],
            None if self.b is None else [self.b[i] for i in idx],
            self.y[idx],
            self.label_names,
        )


def examples_of(task: TaskData, label_names: list[str] | None = None) -> Examples:
    """A prepared task's examples; labels coded against ``label_names`` (the training split's) when given."""
    if task.multilabel:
        raise ValueError(
            f"{task.name}: multi-label tasks are not supported by fine-tuning (single-label classification only)"
        )
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


def stratified_subset(ex: Examples, n: int, seed: int = SPLIT_SEED) -> Examples:
    """At most ``n`` examples (0: all), a seeded stratified subset."""
    if not n or len(ex) <= n:
        return ex
    _, keep = stratified_split(ex.y, n / len(ex), seed)
    return ex.subset(keep)


def _ngrams(words: tuple[str, ...], proper: bool) -> set[tuple[str, ...]]:
    """Every contiguous word sequence of ``words`` (``proper``: shorter than ``words``)."""
    n = len(words)
    return {words[i:j] for i in range(n) for j in range(i + 1, n + 1) if not (proper and j - i == n)}


def maximal_phrases(texts: list[str]) -> np.ndarray:
    """Indices of the texts whose word sequence lies inside no other text's (for SST-2: whole sentences).

    Longest first, only a maximal text's word sequences are collected: a text inside another lies inside a maximal
    one (a contiguous run of a contiguous run), and texts of one length cannot hold each other, so a text is maximal
    exactly when no longer maximal text holds it.
    """
    words = [tuple(t.split()) for t in texts]
    inside: set[tuple[str, ...]] = set()
    for w in sorted(set(words), key=len, reverse=True):
        if w not in inside:
            inside |= _ngrams(w, proper=True)
    return np.array([i for i, w in enumerate(words) if w not in inside], dtype=np.int64)


def phrase_disjoint_split(ex: Examples, n_heldout: int, seed: int = SPLIT_SEED) -> tuple[Examples, Examples, int]:
    """(training, held-out, dropped): held-out items are ``n_heldout`` maximal phrases (stratified); every other item
    that is inside a held-out item or contains one (word sequences) is dropped from training."""
    maximal = maximal_phrases(ex.a)
    if not 2 <= n_heldout < len(maximal):
        raise ValueError(
            f"{n_heldout} held-out sentences asked for, but the task has {len(maximal)} whole sentences; lower "
            f"--max-heldout"
        )
    _, pick = stratified_split(ex.y[maximal], n_heldout / len(maximal), seed)
    held = maximal[pick]
    held_words = {tuple(ex.a[i].split()) for i in held}
    inside_held: set[tuple[str, ...]] = set()
    for w in held_words:
        inside_held |= _ngrams(w, proper=False)
    held_set = set(held.tolist())
    train, dropped = [], 0
    for i, text in enumerate(ex.a):
        if i in held_set:
            continue
        w = tuple(text.split())
        # inside a held-out item, or a copy of one (held-out items are maximal: no other text holds one)
        if w in inside_held:
            dropped += 1
        else:
            train.append(i)
    return ex.subset(train), ex.subset(np.sort(held)), dropped


def held_out(
    task: TaskData,
    name: str,
    train: Examples,
    *,
    fraction: float,
    max_heldout: int = 0,
    data_dir: str | os.PathLike,
    raw_dir=None,
    mirror=None,
) -> tuple[Examples, Examples, dict]:
    """(training examples, held-out examples, a description for the run's record); the same for every run. Without a
    validation split, ``fraction`` of the training data is held out, or ``max_heldout`` examples if fewer (0: no
    cap)."""
    canonical = resolve_name(name)
    if has_dev_split(canonical) if canonical.startswith("glue/") else False:
        try:
            dev = build(
                canonical,
                data_dir=data_dir,
                raw_dir=raw_dir,
                mirror=mirror,
                split="dev",
                allow_download=False,
                progress=False,
            )
        except FetchError as exc:
            logger.info(
                "%s: validation split not at hand (%s); holding out %.0f %% of the training data",
                canonical,
                exc,
                fraction * 100,
            )
        else:
            ex = stratified_subset(examples_of(dev, train.label_names), max_heldout)
            return train, ex, {"source": "validation split", "file": dev.sources[0]["name"], "n": len(ex)}
    n_heldout = int(round(fraction * len(train)))
    if max_heldout:
        n_heldout = min(n_heldout, max_heldout)
    if canonical in PHRASE_TASKS and not train.pair:
        tr, ho, dropped = phrase_disjoint_split(train, n_heldout)
        return (
            tr,
            ho,
            {
                "source": "fixed split of the training data: whole sentences, their phrases dropped from training",
                "fraction": fraction,
                "seed": SPLIT_SEED,
                "n": len(ho),
                "dropped_training_phrases": dropped,
            },
        )
    tr, ho = stratified_split(train.y, n_heldout / len(train), SPLIT_SEED)
    return (
        train.subset(tr),
        train.subset(ho),
        {
            "source": "fixed stratified split of the training data",
            "fraction": fraction,
            "seed": SPLIT_SEED,
            "n": len(ho),
        },
    )


VALIDATION_SEED = SPLIT_SEED + 1  # the validation split: fixed too, and apart from the held-out split's draw


def validation_split(
    name: str, train: Examples, *, fraction: float, max_validation: int = 0
) -> tuple[Examples, Examples | None, dict]:
    """(training examples, validation examples or None, a description): ``fraction`` of the training data (at most
    ``max_validation`` examples; 0: no cap) carved out for model selection, fixed for every run; never the held-out
    set that is reported. For SST-2 the validation items are whole sentences and their phrases leave training, as
    for the held-out set. ``fraction`` 0: no validation split (the runs published before it existed)."""
    if not fraction:
        return train, None, {}
    n = int(round(fraction * len(train)))
    if max_validation:
        n = min(n, max_validation)
    if n < 2:
        raise ValueError(f"a validation split of {n} example(s) is too small: raise --validation-fraction")
    if resolve_name(name) in PHRASE_TASKS and not train.pair:
        rest, validation, dropped = phrase_disjoint_split(train, n, VALIDATION_SEED)
        info = {"source": "whole sentences of the training data, their phrases dropped from training"}
        info["dropped_training_phrases"] = dropped
    else:
        keep, pick = stratified_split(train.y, n / len(train), VALIDATION_SEED)
        rest, validation = train.subset(keep), train.subset(pick)
        info = {"source": "fixed stratified split of the training data"}
    return rest, validation, {**info, "fraction": fraction, "seed": VALIDATION_SEED, "n": len(validation)}


@dataclass
class Splits:
    """What a fine-tuning run (and the bag-of-words baseline) trains on, selects on and reports on."""

    train: Examples
    validation: Examples | None
    heldout: Examples
    info: dict  # the record's description of the held-out and validation data


def splits(task: TaskData, s, *, data_dir, raw_dir=None, mirror=None) -> Splits:
    """The held-out set (:func:`held_out`), the validation split carved from what is left (:func:`validation_split`),
    then the fixed training subset (``max_train``): the same for every seed, weight and model, and for the baseline.
    ``s``: the run's settings (``heldout_fraction``, ``max_heldout``, ``validation_fraction``, ``max_validation``,
    ``max_train``)."""
    train_all = examples_of(task)
    check_held_out(train_all, "training")
    train, heldout, held_info = held_out(
        task,
        task.name,
        train_all,
        fraction=s.heldout_fraction,
        max_heldout=s.max_heldout,
        data_dir=data_dir,
        raw_dir=raw_dir,
        mirror=mirror,
    )
    train, validation, validation_info = validation_split(
        task.name, train, fraction=s.validation_fraction, max_validation=s.max_validation
    )
    train = stratified_subset(train, s.max_train)  # fixed: seeds vary the initialisation and the batch order only
    check_held_out(train, "training")
    check_held_out(heldout)
    if validation is not None:
        check_held_out(validation, "validation")
    info = {"held_out": held_info, **({"validation": validation_info} if validation_info else {})}
    return Splits(train, validation, heldout, info)


def check_held_out(ex: Examples, what: str = "held-out") -> None:
    if len(ex) == 0:
        raise ValueError(f"the {what} split is empty; use a larger held-out fraction or more data")
    if len(np.unique(ex.y)) < 2:
        raise ValueError(
            f"the {what} split holds a single class ({ex.label_names[int(ex.y[0])]}); accuracy and the silhouette need "
            f"two"
        )
