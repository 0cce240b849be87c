"""Read embedding matrices and label vectors from the file formats researchers hand around.

``.npy``, ``.npz``, ``.parquet``, ``.pt``/``.pth`` for matrices; the same plus
``.txt``/``.csv``/``.tsv`` (one label per line) for labels. Errors name the
file and say how to fix it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MATRIX_SUFFIXES = (".npy", ".npz", ".parquet", ".pt", ".pth")
LABEL_SUFFIXES = MATRIX_SUFFIXES + (".txt", ".csv", ".tsv")


class InputFileError(ValueError):
    """A file that cannot be read as the array the command expects."""


def _pick(path: Path, names: list[str], key: str | None, preferred: tuple[str, ...]) -> str:
    if key is not None:
        if key not in names:
            raise InputFileError(f"{path}: no entry named {key!r}; it holds {names}. Pass one of these with --key.")
        return key
    if len(names) == 1:
        return names[0]
    for p in preferred:
        if p in names:
            return p
    raise InputFileError(f"{path}: holds several entries {names}; choose one with --key (or --labels-key).")


def _from_parquet(path: Path, key: str | None, preferred: tuple[str, ...]) -> np.ndarray:
    import pandas as pd

    df = pd.read_parquet(path)
    cols = [str(c) for c in df.columns]
    if key is not None or any(p in cols for p in preferred):
        col = df[_pick(path, cols, key, preferred)]
        first = col.iloc[0] if len(col) else None
        if isinstance(first, (list, tuple, np.ndarray)):  # one list-valued cell per row
            return np.stack([np.asarray(v) for v in col])
        return col.to_numpy()
    if len(cols) == 1:
        return df.iloc[:, 0].to_numpy()
    numeric = df.select_dtypes("number")
    if numeric.shape[1] != df.shape[1]:
        raise InputFileError(
            f"{path}: mixes numeric and non-numeric columns {cols}; name the column to use with --key "
            "(a list-valued 'embedding' column, or one numeric column per dimension)"
        )
    return numeric.to_numpy()


def load_array(path: str | Path, key: str | None = None, *, preferred: tuple[str, ...] = ("embeddings", "embedding", "X")) -> np.ndarray:
    """Load one array from ``path``; ``key`` picks an entry of an .npz/.pt dict or a parquet column."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                return z[_pick(path, list(z.files), key, preferred)]
        if suffix == ".parquet":
            return _from_parquet(path, key, preferred)
        if suffix in (".pt", ".pth"):
            import torch

            obj = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(obj, dict):
                obj = obj[_pick(path, [str(k) for k in obj], key, preferred)]
            if not isinstance(obj, torch.Tensor):
                raise InputFileError(f"{path}: holds a {type(obj).__name__}, not a tensor")
            return obj.numpy()
        if suffix in (".txt", ".csv", ".tsv"):
            lines = path.read_text(encoding="utf-8").splitlines()
            values = np.array([ln.strip() for ln in lines if ln.strip()])
            try:
                return values.astype(np.int64)
            except ValueError:
                return values
    except InputFileError:
        raise
    except Exception as exc:  # a corrupt or mislabelled file: say which one
        raise InputFileError(f"{path}: could not be read as {suffix} ({type(exc).__name__}: {exc})") from exc
    raise InputFileError(f"{path}: unsupported file type {suffix!r}; use one of {', '.join(LABEL_SUFFIXES)}")
