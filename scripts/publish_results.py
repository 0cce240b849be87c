"""Copy one section of a finished workflow's results into docs/results/<section>, replacing that section only.

    python scripts/publish_results.py paper results/reproduce-offline docs/results/paper

Sections (what `make reproduce-<section>` publishes):
  paper     tables/correlations*, tables/table*_sizes*, tables/label_centred*, the paper figures, aggregate/runs.csv and every run it lists
  istar     tables/istar*, figures/istar_*, aggregate/istar/runs.csv and every run it lists (the lambda = 0 runs too)
  layers    tables/layers*, figures/layers_*, layers/<model>/<corpus>/ (the per-layer tables, PCA, meta)
  finetune  tables/finetune*, figures/finetune_*, finetune/<task>/<model>/<istar|cosreg><weight>/seed<s>.* (records, steps)
  stability tables/istar_stability*, figures/istar_stability*, stability/ (every batch's estimate, meta.json)

Runs are copied from the run list the tables were made from (`record` column), not by globbing, so the published
directory holds exactly what its tables report; the list's `record` paths are rewritten to the published copies.
`PUBLISHED.json` in the section says how it was made: the workflow command (`--made-by`, which `make reproduce-*`
passes), the results directory and the git commit of the workflow checkout it ran in (each run's own commit is in
its record and the tables); paths in it are relative to the repository. The section's README.md (the discussion of
its numbers, written by hand) is carried over. The section is assembled beside its destination and renamed into place (isoflow.atomic.atomic_dir: a destination
that is not an earlier publication is refused without --force); nothing else under docs/results is touched.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import time
from pathlib import Path

from isoflow.atomic import MARKER, OutputExistsError, atomic_dir
from isoflow.provenance import code_version

FIGURE_PREFIXES = ("istar_", "layers_", "finetune_")  # istar_stability too: every section but the paper's has a prefix


def _paper_figure(path: Path) -> bool:
    return not path.name.startswith(FIGURE_PREFIXES)


SECTIONS = {
    "paper": {"tables": ("correlations*", "table*_sizes*", "label_centred*"), "figures": _paper_figure, "runs": "aggregate/runs.csv"},
    "istar": {"tables": ("istar.*",), "figures": lambda p: p.name.startswith("istar_") and not p.name.startswith("istar_stability"),
              "runs": "aggregate/istar/runs.csv"},
    "layers": {"tables": ("layers*",), "figures": lambda p: p.name.startswith("layers_"), "tree": "layers"},
    "finetune": {"tables": ("finetune*",), "figures": lambda p: p.name.startswith("finetune_"), "tree": "finetune"},
    "stability": {"tables": ("istar_stability*",), "figures": lambda p: p.name.startswith("istar_stability"), "tree": "stability"},
}


class PublishError(RuntimeError):
    pass


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _copy_runs(results: Path, runs_csv: Path, staging: Path, published: Path, root: Path) -> None:
    """Every run of the list (its .json record and .parquet trajectory) under staging/trajectories/..., and the list.
    Relative `record` paths are relative to the workflow's working directory `root`."""
    with open(runs_csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "record" not in rows[0]:
        raise PublishError(f"{runs_csv}: no runs listed (column 'record'); run the workflow's aggregate step first")
    for row in rows:
        record = (root / row["record"]).resolve()
        try:
            inside = record.relative_to(results.resolve())
        except ValueError:
            raise PublishError(f"{runs_csv}: run {record} is not under {results}; publish from the results directory "
                               "the aggregate was made in") from None
        for suffix in (".json", ".parquet"):
            src = record.with_suffix(suffix)
            if not src.is_file():
                raise PublishError(f"{runs_csv}: listed run {src} is missing; rerun the workflow")
            _copy(src, staging / inside.with_suffix(suffix))
        row["record"] = str(published / inside)
    with open(staging / "runs.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _top_level(section: str) -> set[str]:
    """The names a published section consists of (how a section published before the marker file is recognised)."""
    spec = SECTIONS[section]
    return {"tables", "figures"} | ({"trajectories", "runs.csv"} if "runs" in spec else {spec["tree"]})


def _provenance(section: str, results: Path, root: Path, made_by: str | None) -> dict:
    return {"section": section, "made_by": made_by, "results_dir": os.path.relpath(results.resolve(), root.resolve()),
            "workflow_checkout": code_version(root), "published_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def publish(section: str, results: Path, dest: Path, root: Path = Path("."), force: bool = False,
            made_by: str | None = None) -> list[Path]:
    """Assemble `section` of `results` beside dest, then rename it into dest's place; return the published files.

    dest is replaced only if it is an earlier publication (isoflow's marker file, or exactly a section's names) or
    `force` is given (isoflow.atomic.atomic_dir); on any failure it stays as it was and nothing is left beside it."""
    spec = SECTIONS[section]
    tables = sorted({p for pattern in spec["tables"] for p in (results / "tables").glob(pattern)})
    figures = sorted(p for p in (results / "figures").glob("*") if p.is_file() and spec["figures"](p))
    if not tables or not figures:
        raise PublishError(f"{results}: no {section} tables or figures; run `snakemake {section}` with its config first")
    try:
        with atomic_dir(dest, expected=_top_level(section), force=force, kind=f"published {section} results") as staging:
            (staging / "PUBLISHED.json").write_text(json.dumps(_provenance(section, results, root, made_by), indent=2) + "\n")
            if (dest / "README.md").is_file():  # the section's discussion is written by hand: carried over
                shutil.copy2(dest / "README.md", staging / "README.md")
            for path in tables + figures:
                _copy(path, staging / path.parent.name / path.name)
            if "runs" in spec:
                _copy_runs(results, results / spec["runs"], staging, dest, root)
            else:
                shutil.copytree(results / spec["tree"], staging / spec["tree"],
                                ignore=shutil.ignore_patterns("benchmarks", ".*"))
    except OutputExistsError as err:
        raise PublishError(str(err).replace("--out", "another destination")) from None
    return sorted(p for p in dest.rglob("*") if p.is_file() and p.name != MARKER)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("section", choices=sorted(SECTIONS))
    parser.add_argument("results", type=Path, help="the workflow's results_dir, e.g. results/reproduce-offline")
    parser.add_argument("dest", type=Path, help="e.g. docs/results/paper")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the workflow's working directory, which the run list's paths are relative to")
    parser.add_argument("--force", action="store_true",
                        help="replace dest even if it holds files that are not an earlier publication")
    parser.add_argument("--made-by", default=None, help="the workflow command that made the results (recorded in PUBLISHED.json)")
    args = parser.parse_args(argv)
    try:
        files = publish(args.section, args.results, args.dest, args.root, force=args.force, made_by=args.made_by)
    except PublishError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{args.dest}: {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
