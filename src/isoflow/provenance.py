"""Where a result came from: the git commit of the isoflow code that made it, whether that tree was dirty, and the
inputs' paths as a record shows them."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path


def code_version(checkout: str | Path | None = None) -> dict:
    """``{"git_commit": sha or None, "git_dirty": bool or None}`` of the checkout isoflow is imported from
    (read once per process: the code a process runs does not change under it), or of the directory `checkout`.

    None when isoflow is not imported from a git checkout (an installed wheel) or git is missing. "Dirty" means
    uncommitted changes to tracked files (untracked files do not change what the code does unless imported,
    and a results directory inside the checkout would otherwise mark every run dirty) outside the committed results
    (``RESULT_FOLDERS``: a sweep saving its runs into partial-results/ as it goes, or a benchmark writing its JSON,
    changes no code).
    """
    return dict(_own_version()) if checkout is None else _git_version(Path(checkout).resolve())


# Folders of committed results, not code: changes there do not make a checkout dirty
PARTIAL_RESULTS = "partial-results"  # runs a long sweep saved as it went (scripts/partial_runs.py)
PUBLISHED_RESULTS = "docs/results"  # the publications (scripts/publish_results.py)
BENCHMARK_RESULTS = "benchmarks/results"  # the benchmarks' JSON (one benchmark run after another writes there)
RESULT_FOLDERS = (PARTIAL_RESULTS, PUBLISHED_RESULTS, BENCHMARK_RESULTS)


def shown_path(path: str | Path) -> str:
    """`path` as a record shows it: relative to the working directory when it lies under it (the workflow runs in the
    repository root, so a record reads ``data/raw/models/...`` on every machine and after ``dvc pull``), absolute
    otherwise (a Hugging Face cache, a file elsewhere); a record's sha256 beside it says which file it was.

    >>> shown_path(Path.cwd() / "data" / "task.csv")
    'data/task.csv'
    """
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(resolved)


@functools.lru_cache(maxsize=1)
def _own_version() -> dict:
    return _git_version(Path(__file__).resolve().parent)


def _git_version(here: Path) -> dict:
    def git(*args: str) -> str | None:
        try:
            p = subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return p.stdout.strip() if p.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"git_commit": None, "git_dirty": None}
    outside_results = [":(top)", *(f":(top,exclude){folder}" for folder in RESULT_FOLDERS)]
    status = git("status", "--porcelain", "--untracked-files=no", "--", *outside_results)
    return {"git_commit": commit, "git_dirty": None if status is None else bool(status)}
