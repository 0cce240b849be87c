"""The canonical task table every dataset is turned into, and its atomic on-disk form.

A task is two tables and a small JSON:

* ``items.parquet`` — column ``text``: each distinct sentence (or word) once.
  Row *i* is item *i*; embeddings are computed for these rows, in this order.
* ``examples.parquet`` — one row per labelled example: ``a`` (item index), ``b``
  (second item index, pair tasks only) and ``label`` (a string; single-label
  tasks) or ``labels`` (a list of strings; multi-label tasks).
* ``meta.json`` — task name, kind (``single``/``pair``), ``multilabel``,
  ``label_names``, counts, and the sources (name, URL, sha256) it was built from.

The directory is written next to its final place and renamed into it, so a
reader never sees a half-written task.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..atomic import atomic_dir, check_replaceable
from ..errors import DataFormatError


@dataclass
class TaskData:
    """A prepared task: unique items, examples pointing into them, and metadata."""

    name: str
    items: pd.DataFrame
    examples: pd.DataFrame
    multilabel: bool
    sources: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def pair(self) -> bool:
        return "b" in self.examples.columns

    @property
    def label_names(self) -> list[str]:
        if self.multilabel:
            return sorted({lab for labs in self.examples["labels"] for lab in labs})
        return sorted(self.examples["label"].unique().tolist())

    def meta(self) -> dict:
        from ..version import __version__

        return {
            "task": self.name,
            "kind": "pair" if self.pair else "single",
            "multilabel": self.multilabel,
            "label_names": self.label_names,
            "n_items": int(len(self.items)),
            "n_examples": int(len(self.examples)),
            "sources": self.sources,
            "isoflow_version": __version__,
            **self.extra,
        }


def build_task(
    name: str,
    texts: Sequence[str] | Sequence[tuple[str, str]],
    labels: Sequence[str] | Sequence[Iterable[str]],
    *,
    multilabel: bool = False,
    sources: list[dict] | None = None,
    extra: dict | None = None,
) -> TaskData:
    """Build a task from per-example texts (strings, or (a, b) pairs) and labels.

    Items are the distinct strings in order of first appearance, so the same
    input always gives the same item order.
    """
    if len(texts) != len(labels):
        raise DataFormatError(f"{name}: {len(texts)} texts but {len(labels)} labels")
    if not len(texts):
        raise DataFormatError(f"{name}: no labelled examples")
    index: dict[str, int] = {}

    def idx(s: str) -> int:
        return index.setdefault(s, len(index))

    pair = isinstance(texts[0], tuple)
    cols: dict[str, list] = {"a": [], "b": []} if pair else {"a": []}
    for t in texts:
        if pair:
            cols["a"].append(idx(t[0]))
            cols["b"].append(idx(t[1]))
        else:
            cols["a"].append(idx(t))
    examples = pd.DataFrame({k: pd.array(v, dtype="int64") for k, v in cols.items()})
    if multilabel:
        examples["labels"] = [sorted(set(map(str, labs))) for labs in labels]
        if any(len(labs) == 0 for labs in examples["labels"]):
            raise DataFormatError(f"{name}: an example has an empty label set")
    else:
        examples["label"] = [str(lab) for lab in labels]
    items = pd.DataFrame({"text": list(index)})
    return TaskData(name, items, examples, multilabel, sources or [], extra or {})


TASK_FILES = ("items.parquet", "examples.parquet", "meta.json")


def check_task_out(out_dir: str | os.PathLike, *, force: bool = False) -> None:
    """Refuse (before any work) an output path holding something isoflow did not write."""
    check_replaceable(out_dir, expected=TASK_FILES, force=force)


def write_task(task: TaskData, out_dir: str | os.PathLike, *, force: bool = False) -> Path:
    """Write ``task`` to ``out_dir`` atomically (temp directory beside it, then rename).

    An existing ``out_dir`` is replaced only if it is an earlier isoflow output (or empty), or with ``force``."""
    out = Path(out_dir)
    with atomic_dir(out, expected=TASK_FILES, force=force, kind="task") as tmp:
        task.items.to_parquet(tmp / "items.parquet", index=False)
        task.examples.to_parquet(tmp / "examples.parquet", index=False)
        (tmp / "meta.json").write_text(json.dumps(task.meta(), indent=2, ensure_ascii=False) + "\n")
    return out


def read_task(task_dir: str | os.PathLike) -> TaskData:
    """Read a task written by :func:`write_task`."""
    d = Path(task_dir)
    if d.is_file():
        raise FileNotFoundError(
            f"{d} is a file, not a prepared task directory; give the directory `isoflow prepare` wrote"
        )
    missing = [f for f in TASK_FILES if not (d / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{d} is not a prepared task (missing {', '.join(missing)}); run `isoflow prepare` first"
        )
    meta = json.loads((d / "meta.json").read_text())
    items = pd.read_parquet(d / "items.parquet")
    examples = pd.read_parquet(d / "examples.parquet")
    if meta["multilabel"]:
        examples["labels"] = [list(v) for v in examples["labels"]]
    known = {"task", "kind", "multilabel", "label_names", "n_items", "n_examples", "sources", "isoflow_version"}
    return TaskData(
        meta["task"],
        items,
        examples,
        meta["multilabel"],
        meta["sources"],
        {k: v for k, v in meta.items() if k not in known},
    )


def source_record(res, path: Path) -> dict:
    """What meta.json records of a file a task was built from."""
    from ..fetch import sha256_of

    return {
        "name": res.name,
        "url": res.urls[0] if res.urls else None,
        "sha256": sha256_of(path),
        "license": res.license,
    }
