"""SNLI 1.0 validation split (Bowman et al., 2015): premise/hypothesis pairs with a gold label.

The canonical file is ``snli_1.0/snli_1.0_dev.jsonl`` inside the Stanford zip
(10,000 pairs; 158 have no gold label, ``gold_label == "-"``, and are dropped,
leaving 9,842). A mirror may instead hold ``snli/dev.jsonl``: the same dev file
already filtered to the gold-labelled pairs, with fields premise/hypothesis/label
(anthonywchen/generative-nli; sha256 fixed below). Either gives the same 9,842
pairs in the same order. License: CC BY-SA 4.0.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..fetch import Resource
from .table import DataFormatError, TaskData, build_task, source_record

LABELS = ("entailment", "neutral", "contradiction")
NO_GOLD = "-"  # annotators did not agree: no gold label
CANONICAL_KEYS = ("sentence1", "sentence2", "gold_label")
GOLD_ONLY_KEYS = ("premise", "hypothesis", "label")


def _rows(path: Path):
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"{path}:{lineno}: not a JSON line ({exc.msg})") from exc
            except UnicodeDecodeError as exc:
                raise DataFormatError(f"{path}: not UTF-8 text (byte {exc.start})") from exc


def read_pairs(path: Path, keys: tuple[str, str, str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(premise, hypothesis) pairs with a gold label; pairs without one are skipped, unknown labels are errors."""
    texts, labels = [], []
    for lineno, row in _rows(path):
        missing = [k for k in keys if k not in row]
        if missing:
            raise DataFormatError(f"{path}:{lineno}: missing field(s) {missing}; expected {list(keys)}")
        label = row[keys[2]]
        if label == NO_GOLD:
            continue
        if label not in LABELS:
            raise DataFormatError(
                f"{path}:{lineno}: label {label!r} is not one of SNLI's {list(LABELS)} (or {NO_GOLD!r})"
            )
        texts.append((row[keys[0]], row[keys[1]]))
        labels.append(label)
    if not texts:
        raise DataFormatError(f"{path}: no labelled pairs")
    return texts, labels


def _check_canonical(path: Path) -> None:
    read_pairs(path, CANONICAL_KEYS)


CANONICAL = Resource(
    name="snli_1.0/snli_1.0_dev.jsonl",
    urls=("https://nlp.stanford.edu/projects/snli/snli_1.0.zip",),
    member="snli_1.0/snli_1.0_dev.jsonl",
    license="CC BY-SA 4.0",
    note="hash not pinned: no verified copy was available to us",
    check=_check_canonical,
)
GOLD_ONLY = Resource(
    name="snli/dev.jsonl",
    urls=(
        "https://raw.githubusercontent.com/anthonywchen/generative-nli/aad500326efe82814047e6ea3b90b5fd8969e36b/data/snli/dev.jsonl",
    ),
    sha256="4610d85664b3fa453c33fbbbc006ac870aaa1435ad1583b944af027673f5c3d4",
    size=1645357,
    license="CC BY-SA 4.0",
    note="SNLI 1.0 dev filtered to gold labels; fields premise/hypothesis/label",
)
# Alternatives: the first one found in the cache or a mirror is used; else the first downloadable.
ALTERNATIVES = (CANONICAL, GOLD_ONLY)


def build(paths: dict[str, Path]) -> TaskData:
    res = CANONICAL if CANONICAL.name in paths else GOLD_ONLY
    path = paths[res.name]
    texts, labels = read_pairs(path, CANONICAL_KEYS if res is CANONICAL else GOLD_ONLY_KEYS)
    return build_task("snli", texts, labels, sources=[source_record(res, path)])
