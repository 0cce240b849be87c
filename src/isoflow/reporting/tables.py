"""Tables as CSV (for code), Markdown (for the README and docs) and LaTeX (for papers), written atomically."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..atomic import atomic_file


def _cells_escaped(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as Markdown prints it: every ``|`` inside a text cell written ``\\|``, so that it stays in its cell
    instead of opening another, and integer columns held as objects, so that a table of numbers alone (whose rows
    pandas hands on as one float array) still prints a seed as 3, not 3.0000."""
    escaped = df.copy()
    for name in df.columns:  # only the columns that hold one: mapping a column changes how its empty cells print
        if df[name].map(lambda v: isinstance(v, str) and "|" in v).any():
            escaped[name] = df[name].map(lambda v: v.replace("|", "\\|") if isinstance(v, str) else v)
        elif pd.api.types.is_integer_dtype(df[name]):
            escaped[name] = df[name].astype(object)
    return escaped


def write_table(df: pd.DataFrame, stem: str | os.PathLike, *, caption: str, floatfmt: str = "%.3f") -> list[Path]:
    """``stem``.csv, .md (the caption above the table) and .tex (a captioned table); returns the three paths."""
    stem = Path(stem)
    out = []
    for suffix, text in (
        (".csv", df.to_csv(index=False)),
        (".md", f"{caption}\n\n" + _cells_escaped(df).to_markdown(index=False, floatfmt=floatfmt.strip("%")) + "\n"),
        (
            ".tex",
            df.to_latex(
                index=False, float_format=lambda v: floatfmt % v, caption=caption, label=f"tab:{stem.name}", escape=True
            ),
        ),
    ):
        path = stem.with_suffix(suffix)
        with atomic_file(path) as tmp:
            tmp.write_text(text)
        out.append(path)
    return out


def rows_where(frame: pd.DataFrame, **columns) -> pd.DataFrame:
    """The rows of ``frame`` whose every named column equals the given value."""
    keep = np.ones(len(frame), dtype=bool)
    for column, value in columns.items():
        keep &= (frame[column] == value).to_numpy()
    return frame[keep]
