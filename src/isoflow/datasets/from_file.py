"""Your own labelled data as a task: a CSV, TSV, JSONL or Parquet file (by extension), the columns named.

    from isoflow.datasets import from_file
    task = from_file("reviews", "reviews.csv", text="sentence", label="stars")
    pair = from_file("my-nli", "pairs.jsonl", text="premise", text_b="hypothesis", label="gold")
    tags = from_file("topics", "docs.tsv", text="body", label="topics", label_sep="|")   # multi-label

The task is the same kind of table as a built-in task's (:mod:`isoflow.datasets.table`), so every command runs on it
unchanged. Labels may be any strings or integers; they are kept as text and their classes listed in ``meta.json``,
with the file's path and sha256. Bad input is one error naming the file, the column and the row (1-based, the
header not counted): a missing column, an empty text, a missing label, a single class.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataFormatError
from .table import TaskData, build_task

READERS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


def _read(path: Path):
    import pandas as pd

    kind = READERS.get(path.suffix.lower())
    if kind is None:
        raise DataFormatError(f"{path}: unsupported file type {path.suffix!r}; use one of {', '.join(sorted(READERS))}")
    try:
        if kind in ("csv", "tsv"):  # every value as text: "007" stays "007", labels 1 and 2 stay "1" and "2"
            return pd.read_csv(
                path, sep="," if kind == "csv" else "\t", dtype=str, keep_default_na=False, na_values=[""]
            )
        if kind == "jsonl":
            return pd.read_json(path, lines=True, dtype=False)
        return pd.read_parquet(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); convert it to UTF-8"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - pandas and pyarrow raise many types for malformed files
        raise DataFormatError(
            f"{path}: could not be read as {kind} ({type(exc).__name__}: {str(exc).splitlines()[0]})"
        ) from exc


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def from_file(
    name: str,
    path: str | os.PathLike,
    *,
    text: str,
    label: str,
    text_b: str | None = None,
    label_sep: str | None = None,
) -> TaskData:
    """A task from the columns ``text`` (and ``text_b`` for pairs) and ``label`` of a data file; with ``label_sep``,
    ``label`` holds several labels per row, separated by it (a multi-label task)."""
    path = Path(path)
    df = _read(path)
    columns = [text, *([text_b] if text_b else []), label]
    for option, col in zip(("--text", *(["--text-b"] if text_b else []), "--label"), columns):
        if col not in df.columns:
            shown = ", ".join(map(str, df.columns[:20]))
            raise DataFormatError(f"{path}: no column {col!r} (it has: {shown}); name the right one with {option}")
    if not len(df):
        raise DataFormatError(f"{path}: no rows")
    texts, labels = [], []
    for i, row in enumerate(df[columns].itertuples(index=False, name=None), start=1):
        parts = []
        for col, value in zip(columns[:-1], row[:-1]):
            if _missing(value) or not str(value).strip():
                raise DataFormatError(f"{path}, row {i}, column {col!r}: empty text; fill it or remove the row")
            parts.append(str(value).strip())
        value = row[-1]
        if _missing(value) or not str(value).strip():
            raise DataFormatError(f"{path}, row {i}, column {label!r}: no label; give every row one or remove the row")
        if label_sep:
            labs = [x.strip() for x in _text(value).split(label_sep) if x.strip()]
            if not labs:
                raise DataFormatError(
                    f"{path}, row {i}, column {label!r}: no label between the separators {label_sep!r}"
                )
            labels.append(labs)
        else:
            labels.append(_text(value).strip())
        texts.append(tuple(parts) if text_b else parts[0])
    classes = sorted({lab for labs in labels for lab in labs} if label_sep else set(labels))
    if len(classes) < 2:
        raise DataFormatError(
            f"{path}: column {label!r} holds a single class ({classes[0]!r}); classification needs at least two"
        )
    from ..fetch import sha256_of
    from ..provenance import shown_path

    source = {"name": path.name, "path": shown_path(path), "url": None, "sha256": sha256_of(path), "license": None}
    columns_used = {"text": text, "text_b": text_b, "label": label, "label_sep": label_sep}
    return build_task(
        name, texts, labels, multilabel=bool(label_sep), sources=[source], extra={"from_file": columns_used}
    )
