"""CoDWoE English (Mickus et al., SemEval-2022 task 1): dictionary entries with the word's part of speech.

The complete datasets (released after the shared task, CC BY-SA) carry ``word``
and ``pos`` for every gloss. The POS task groups the entries by word: each word
is one item labelled with the *set* of its POS tags (multi-label), in order of
first appearance. Both of the released layouts are read: a JSON list of entry
objects (the ``*.complete.json`` files) or a CSV with a header
(``en.complete.csv`` of the full-dataset archive).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..fetch import Resource
from .table import DataFormatError, TaskData, build_task, source_record

ENGLISH = Resource(
    name="codwoe/en.complete.csv",
    urls=("https://codwoe.atilf.fr/data/full_dataset.zip",),
    member="full_dataset/en.complete.csv",
    license="CC BY-SA 4.0 (CoDWoE); dictionary data from DBnary (Sérasset 2014)",
    note="hash not pinned: not obtainable here",
)
RESOURCES = (ENGLISH,)


def read_entries(path: Path) -> list[dict]:
    """Entries (dicts with at least ``word`` and ``pos``) from a CoDWoE JSON or CSV file."""
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
        if not isinstance(data, list):
            raise DataFormatError(f"{path}: expected a JSON list of entries, got {type(data).__name__}")
        entries = data
    else:
        with open(path, encoding="utf-8", newline="") as fh:
            entries = list(csv.DictReader(fh))
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not e.get("word") or not e.get("pos"):
            raise DataFormatError(
                f"{path}: entry {i} lacks a 'word' or 'pos' field; the POS task needs CoDWoE's *complete* data "
                "(the training files without word/pos cannot be used)"
            )
    return entries


def build(paths: dict[str, Path], vocabulary: set[str] | None = None, vocab_name: str | None = None) -> TaskData:
    """POS sets per word; words outside ``vocabulary`` (when given) are left out and counted."""
    path = paths[ENGLISH.name]
    by_word: dict[str, set[str]] = {}
    for e in read_entries(path):
        by_word.setdefault(e["word"], set()).add(e["pos"])
    words = list(by_word)
    extra = {"n_words_in_source": len(words)}
    if vocabulary is not None:
        words = [w for w in words if w in vocabulary]
        extra.update(vocabulary=vocab_name, n_words_not_in_vocabulary=len(by_word) - len(words))
        if not words:
            raise DataFormatError(f"{path}: none of the {len(by_word)} words is in the vocabulary of {vocab_name}")
    return build_task(
        "pos", words, [by_word[w] for w in words], multilabel=True, sources=[source_record(ENGLISH, path)], extra=extra
    )
