"""`make pull`: fetch the results shared through DVC for this commit, then give the restored files the mtimes of
their place in the workflow (`dvc pull` writes them in arbitrary order: without this, Snakemake would plan to re-run
jobs whose outputs are there). When there is nothing to fetch, say why in one line, with the command that shares
results, instead of DVC's per-file warnings.

    python scripts/pull.py [DVC PULL OPTIONS]     # what `make pull DVC_PULL_ARGS="..."` runs
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARE = (
    "make the results (`dvc repro`, or `make run`), then share them: `dvc push`, `git add dvc.lock`, commit and push"
)


def _dvc(*args: str) -> str:
    return subprocess.run(["dvc", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _remote(pull_args: list[str]) -> tuple[str, str]:
    """(name, url) of the remote `dvc pull` would read: ``-r NAME`` or the default."""
    name = next((pull_args[i + 1] for i, a in enumerate(pull_args[:-1]) if a in ("-r", "--remote")), None)
    name = name or _dvc("remote", "default").strip()
    url = _dvc("config", f"remote.{name}.url").strip() if name else ""
    return name, url


def nothing_to_pull(pull_args: list[str]) -> str | None:
    """One line saying why a pull would fetch nothing, or None when there is something to fetch."""
    if not (ROOT / "dvc.lock").is_file():
        return f"make pull: nothing has been shared through DVC for this commit yet (no dvc.lock); {SHARE}"
    name, url = _remote(pull_args)
    if not name:
        return "make pull: no DVC remote is configured; add your lab's: `dvc remote add -d lab ssh://host/path/isoflow`"
    if "://" not in url and not Path(url).is_dir():  # a directory remote that was never pushed to on this machine
        return (
            f"make pull: the DVC remote {name!r} ({url}) does not exist on this machine, so nothing was pushed to it "
            f"here; pull from your lab's remote (`make pull DVC_PULL_ARGS='-r lab'`) or {SHARE}"
        )
    return None


def main(argv: list[str] | None = None) -> int:
    pull_args = list(sys.argv[1:] if argv is None else argv)
    why = nothing_to_pull(pull_args)
    if why:
        print(why, file=sys.stderr)
        return 0 if why.startswith("make pull: nothing has been shared") else 1  # nothing yet is not a failure
    subprocess.run(["dvc", "pull", *pull_args], cwd=ROOT, check=True)
    configs = yaml.safe_load((ROOT / "dvc-configs.yaml").read_text())["configs"].values()
    for entry in configs:
        subprocess.run(
            ["snakemake", "--touch", "--cores", "1", "--configfile", entry["config"], "--quiet"], cwd=ROOT, check=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
