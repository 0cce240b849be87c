"""Read embedding matrices and label vectors from the file formats researchers hand around.

``.npy``, ``.npz``, ``.parquet``, ``.pt``/``.pth`` for matrices; the same plus
``.txt`` (one label per line) and ``.csv``/``.tsv`` (a table with a header row: its only column, or the one named
with the key) for labels. Errors name the file and say how to fix it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

MATRIX_SUFFIXES = (".npy", ".npz", ".parquet", ".pt", ".pth")
LABEL_SUFFIXES = MATRIX_SUFFIXES + (".txt", ".csv", ".tsv")


class InputFileError(ValueError):
    """A file that cannot be read as the array the command expects."""


def _pick(path: Path, names: list[str], key: str | None, preferred: tuple[str, ...], option: str) -> str:
    if key is not None:
        if key not in names:
            raise InputFileError(f"{path}: no entry named {key!r}; it holds {names}. Pass one of these with {option}.")
        return key
    if len(names) == 1:
        return names[0]
    for p in preferred:
        if p in names:
            return p
    raise InputFileError(f"{path}: holds several entries {names}; choose one with {option}.")


def _from_parquet(path: Path, key: str | None, preferred: tuple[str, ...], option: str) -> np.ndarray:
    import pandas as pd

    df = pd.read_parquet(path)
    cols = [str(c) for c in df.columns]
    if key is not None or any(p in cols for p in preferred):
        col = df[_pick(path, cols, key, preferred, option)]
        first = col.iloc[0] if len(col) else None
        if isinstance(first, (list, tuple, np.ndarray)):  # one list-valued cell per row
            return np.stack([np.asarray(v) for v in col])
        return col.to_numpy()
    if len(cols) == 1:
        return df.iloc[:, 0].to_numpy()
    numeric = df.select_dtypes("number")
    if numeric.shape[1] != df.shape[1]:
        raise InputFileError(
            f"{path}: mixes numeric and non-numeric columns {cols}; name the column to use "
            f"with {option} (a list-valued 'embedding' column, or one numeric column per dimension)"
        )
    return numeric.to_numpy()


NPY_MAGIC = b"\x93NUMPY"
MULTI_ENTRY = (
    ".npz",
    ".parquet",
    ".pt",
    ".pth",
    ".csv",
    ".tsv",
)  # formats that may hold several arrays (chosen with a key)


def load_matrix(path: str | Path, key: str | None = None, *, option: str = "--key") -> np.ndarray:
    """:func:`load_array` for an embedding matrix: numeric (or boolean) values, else an error naming the file."""
    arr = load_array(path, key, option=option)
    if arr.dtype.kind not in "biuf":
        raise InputFileError(
            f"{path}: holds {arr.dtype} values, not numbers; an embedding matrix must be numeric "
            "(integers or floats)"
            + (f"; pick the numeric entry with {option}" if Path(path).suffix.lower() in MULTI_ENTRY else "")
        )
    return arr


def load_array(
    path: str | Path,
    key: str | None = None,
    *,
    preferred: tuple[str, ...] = ("embeddings", "embedding", "X"),
    option: str = "--key",
) -> np.ndarray:
    """Load one array from ``path``; ``key`` picks an entry of an .npz/.pt dict or a parquet column. ``option`` is
    the command-line option that sets ``key``, named in error messages."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory; give the file inside it (e.g. {path}/embeddings.npy)")
    suffix = path.suffix.lower()
    if key is not None and suffix not in MULTI_ENTRY:
        raise InputFileError(
            f"{path}: a {suffix} file holds a single array; {option} applies only to .npz, .parquet and .pt files"
        )
    try:
        if suffix == ".npy":
            with open(path, "rb") as fh:
                if fh.read(len(NPY_MAGIC)) != NPY_MAGIC:
                    raise InputFileError(
                        f"{path}: is not a NumPy .npy file (it lacks the .npy header; a text or other "
                        "file renamed?). Save the matrix with numpy.save, or give the file its real suffix."
                    )
            return np.load(path, allow_pickle=False)
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                name = _pick(path, list(z.files), key, preferred, option)
                try:
                    return z[name]
                except ValueError as exc:  # an object array: reading it would run pickled code
                    raise InputFileError(
                        f"{path}: entry {name!r} is an array of Python objects, which isoflow does not unpickle; "
                        "save text labels as a string array, e.g. np.savez(f, labels=np.array(labels, dtype=str))"
                    ) from exc
        if suffix == ".parquet":
            return _from_parquet(path, key, preferred, option)
        if suffix in (".pt", ".pth"):
            import torch

            obj = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(obj, dict):
                obj = obj[_pick(path, [str(k) for k in obj], key, preferred, option)]
            if not isinstance(obj, torch.Tensor):
                raise InputFileError(f"{path}: holds a {type(obj).__name__}, not a tensor")
            return obj.numpy()
        if suffix in (".csv", ".tsv"):  # a table with a header row: one column, or the one named by the key
            import pandas as pd

            df = pd.read_csv(path, sep="," if suffix == ".csv" else "\t", dtype=str, keep_default_na=False)
            col = _pick(path, [str(c) for c in df.columns], key, preferred, option)
            values = df[col].str.strip().to_numpy()
            try:
                return values.astype(np.int64)
            except ValueError:
                return values.astype(str)
        if suffix == ".txt":  # one value per line, no header
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except UnicodeDecodeError as exc:
                raise InputFileError(
                    f"{path}: is not UTF-8 text (byte {exc.start}: {exc.reason}); convert it, e.g. "
                    f"`iconv -f latin1 -t utf-8 {path} > utf8{path.suffix}`"
                ) from exc
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
