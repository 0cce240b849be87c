"""Write-then-rename helpers: a reader never sees a half-written file or directory, and nothing isoflow did not
write is ever deleted.

* :func:`atomic_file` writes a temp file beside the target and renames it into place on success.
* :func:`atomic_dir` does the same for a directory. It replaces an existing directory only if isoflow wrote it
  (it holds the marker file :data:`MARKER`, or exactly the files this kind of output consists of) or if it is
  empty; anything else is refused with :class:`OutputExistsError` unless ``force=True``. The current directory,
  its parents, the home directory and ``/`` are refused even then.

Both honour the process umask (``tempfile`` creates 0600 files and 0700 directories, which colleagues on shared
cluster storage could not read)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

MARKER = ".isoflow-output"
# A long command's progress, kept beside its output until the output is written, so that the same command resumes
# (a layer analysis' folder, a fine-tuning run's state): ``.<output's name>.partial``, hidden and never an output.
IN_PROGRESS = ".partial"


def in_progress_path(out: str | os.PathLike) -> Path:
    """Where the command writing ``out`` keeps its progress: ``.<out's name>.partial`` beside it."""
    out = Path(out)
    return out.with_name(f".{out.name}{IN_PROGRESS}")


class OutputExistsError(FileExistsError):
    """The output path holds something isoflow did not write (the message names it and the fix)."""


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _chmod_default(path: Path, *, directory: bool) -> None:
    """Give a temp file/dir the mode a plain ``open``/``mkdir`` would have given it (0666/0777 minus the umask)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success it replaces ``path``, on any error it is deleted."""
    path = Path(path)
    if path.is_dir():
        raise OutputExistsError(
            f"{path} is a directory; isoflow wants to write a file there. Choose another output path."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    try:
        _chmod_default(Path(tmp), directory=False)
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_json(path: str | os.PathLike, value) -> Path:
    """``value`` as indented JSON at ``path``, written whole or not at all (:func:`atomic_file`)."""
    with atomic_file(path) as tmp:
        tmp.write_text(json.dumps(value, indent=2) + "\n")
    return Path(path)


def _protected(path: Path) -> str | None:
    """Why ``path`` may never be replaced (the working directory, one of its parents, home, root), or None."""
    resolved = path.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        return "it is the current directory or one of its parents"
    if resolved == Path.home().resolve():
        return "it is the home directory"
    if resolved == Path(resolved.anchor):
        return "it is the filesystem root"
    return None


def owned_by_isoflow(path: Path, expected: Iterable[str] = ()) -> bool:
    """Whether the directory ``path`` is an earlier output of isoflow: it holds the :data:`MARKER`, or (outputs
    written before the marker existed) exactly the ``expected`` file names."""
    if (path / MARKER).is_file():
        return True
    expected = set(expected)
    return bool(expected) and {p.name for p in path.iterdir()} == expected


def check_replaceable(path: str | os.PathLike, *, expected: Iterable[str] = (), force: bool = False) -> None:
    """Raise :class:`OutputExistsError` unless :func:`atomic_dir` may put a directory at ``path``.

    Call it before expensive work, so that a refused output path costs nothing.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    why = _protected(path)
    if why:
        raise OutputExistsError(
            f"refusing to write an output directory at {path}: {why}. Choose another output path (--out)."
        )
    if path.is_symlink() or not path.is_dir():
        if force:
            return
        kind = "a symbolic link" if path.is_symlink() else "a file"
        raise OutputExistsError(
            f"{path} exists and is {kind}, not an isoflow output directory; refusing to replace it. "
            "Choose another output path (--out), or pass --force to replace it."
        )
    if force or owned_by_isoflow(path, expected):
        return
    entries = sorted(p.name for p in path.iterdir())
    if not entries:
        return
    shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
    raise OutputExistsError(
        f"{path} exists and holds files isoflow did not write ({shown}); refusing to replace it. "
        "Choose another output path (--out), or pass --force to replace it."
    )


@contextlib.contextmanager
def atomic_dir(
    path: str | os.PathLike, *, expected: Iterable[str] = (), force: bool = False, kind: str = "output"
) -> Iterator[Path]:
    """Yield a temp directory beside ``path``; on success it takes ``path``'s place.

    What stood at ``path`` is replaced only if :func:`check_replaceable` allows it (checked before and again after
    the work); ``expected`` names the files this output consists of. The new directory carries the
    :data:`MARKER` (``kind`` and the isoflow version), so that a later run may replace it.
    """
    from .version import __version__

    path = Path(path)
    expected = tuple(expected)
    check_replaceable(path, expected=expected, force=force)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        _chmod_default(tmp, directory=True)
        yield tmp
        (tmp / MARKER).write_text(json.dumps({"written_by": "isoflow", "version": __version__, "kind": kind}) + "\n")
        check_replaceable(path, expected=expected, force=force)  # something may have appeared meanwhile
        if path.exists() or path.is_symlink():
            # Move the old output aside first, so that the new one appears in one rename.
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / "previous")
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
