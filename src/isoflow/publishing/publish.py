"""Copy one section of a finished workflow's results into docs/results/<publication>, replacing that publication only;
or run the workflow for a publication first (what `make reproduce-<publication>` does).

    python scripts/publish_results.py optimize results/reproduce-offline docs/results/optimize   # publish what is there
    python scripts/publish_results.py --reproduce optimize                                       # run, then publish

A publication (isoflow.sections.PUBLICATIONS) is a section's results under one config. A section's results are
``<results_dir>/<section>/``: its ``tables/`` and ``figures/`` are copied whole; its runs as the registry says:

* ``listed`` (optimize, istar): exactly the runs its aggregate's ``runs.csv`` lists (``record`` column), not a glob,
  so the published folder holds what its tables report; they go to ``runs/`` (paths inside their section's
  ``runs/`` folder kept; the istar section's λ = 0 rows are optimize runs) and the list's paths are rewritten to the
  published copies;
* ``tree`` (the others): the section's ``runs/`` folder (its hidden files, a run's progress, left).

``PUBLISHED.json`` says how the publication was made: the workflow command (``--made-by``), the results directory
and the git commit of the workflow checkout (each run's own commit is in its record); paths relative to the
repository. The publication's README.md (the discussion of its numbers, written by hand) is carried over. It is
assembled beside its destination and renamed into place (isoflow.atomic.atomic_dir: a destination that is not an
earlier publication is refused without --force); nothing else under docs/results is touched.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..atomic import MARKER, OutputExistsError, atomic_dir
from ..config_files import load
from ..finetune.runs import LrRun, SweepRun, sweep_runs
from ..layout import RUNS
from ..provenance import PUBLISHED_RESULTS, code_version
from ..records import cpu_kind
from ..sections import PUBLICATIONS, SECTIONS
from . import ROOT
from . import partial as partial_runs
from .redraw import run_isoflow

TOP_LEVEL = {"tables", "figures", "runs", "runs.csv", "PUBLISHED.json", "README.md"}  # what a publication consists of


class PublishError(RuntimeError):
    pass


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _inside_runs(record: Path, results: Path) -> Path:
    """A run's path inside its section's runs/ folder (``<results>/<section>/runs/<path>``)."""
    rel = record.relative_to(results.resolve())
    if len(rel.parts) < 3 or rel.parts[1] != RUNS:
        raise ValueError(f"{record} is not in a section's runs/ folder under {results}")
    return Path(*rel.parts[2:])


def _from_root(path: Path, root: Path) -> Path:
    """``path`` relative to the repository ``root`` when it lies below it (a published list must not name the
    checkout it was made in), else as given."""
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return path


def _copy_listed(results: Path, runs_csv: Path, staging: Path, published: Path, root: Path) -> None:
    """Every run of the list (its .json record and .parquet trajectory) under staging/runs/, and the list. Relative
    ``record`` paths are relative to the workflow's working directory ``root``, in the list read and the list
    written."""
    with open(runs_csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "record" not in rows[0]:
        raise PublishError(f"{runs_csv}: no runs listed (column 'record'); run the workflow's aggregate step first")
    for row in rows:
        record = (root / row["record"]).resolve()
        try:
            inside = _inside_runs(record, results)
        except ValueError:
            raise PublishError(
                f"{runs_csv}: run {record} is not in a section's runs/ folder under {results}; publish from the "
                "results directory the aggregate was made in"
            ) from None
        for suffix in (".json", ".parquet"):
            src = record.with_suffix(suffix)
            if not src.is_file():
                raise PublishError(f"{runs_csv}: listed run {src} is missing; rerun the workflow")
            _copy(src, staging / RUNS / inside.with_suffix(suffix))
        row["record"] = str(_from_root(published / RUNS / inside, root))
    with open(staging / "runs.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _copy_tree(runs: Path, staging: Path, names: tuple[str, ...] = ()) -> None:
    """The runs folder, but hidden files (a run in progress); ``names``: only the files so named (and their folders)."""
    if not runs.is_dir():
        raise PublishError(f"{runs}: no runs; run the section's workflow target first")

    def ignored(folder: str, entries: list[str]) -> set[str]:
        hidden = {e for e in entries if e.startswith(".")}
        others = {e for e in entries if names and e not in names and not (Path(folder) / e).is_dir()}
        return hidden | others

    shutil.copytree(runs, staging / RUNS, ignore=ignored)


def _made(info: dict) -> list[tuple[str, bool, object]]:
    """(commit, dirty, threads) of each part of a run: the record's, and where it resumed a saved state, the code that
    ran its first epochs (its thread count unrecorded: taken as the record's)."""
    parts = [info.get("code") or {}]
    if (info.get("resumed") or {}).get("code"):
        parts.append(info["resumed"]["code"])
    return [(c.get("git_commit") or "unknown", bool(c.get("git_dirty")), info.get("threads")) for c in parts]


def _compared_records(runs: Path) -> list[tuple[Path, dict, SweepRun | LrRun]]:
    """(path, record, run id) of every run a one-commit publication compares under ``runs``, by path."""
    found = [(p, run) for kind in (SweepRun, LrRun) for run, p in kind.found_in(runs, ".json")]
    return [(record, json.loads(record.read_text()), run) for record, run in sorted(found, key=lambda f: f[0])]


def _cpus(records: list[tuple[Path, dict, SweepRun | LrRun]]) -> dict[str, list[Path]]:
    """The kinds of CPU the ``records`` name (:func:`isoflow.records.cpu_kind`; older records name none), each with
    its records."""
    cpus: dict[str, list[Path]] = {}
    for record, info, _ in records:
        if kind := cpu_kind(info.get("machine")):
            cpus.setdefault(kind, []).append(record)
    return cpus


def _groups(records: list[tuple[Path, dict, SweepRun | LrRun]], per_seed: bool) -> dict[int | None, list]:
    """The sets of ``records`` that must share a kind of CPU: all of them (None), or each seed's (``per_seed``)."""
    if not per_seed:
        return {None: records}
    groups: dict[int | None, list] = {}
    for found in records:
        groups.setdefault(found[2].seed, []).append(found)
    return groups


def check_resumable_here(publication: str, root: Path) -> None:
    """Refuse (PublishError, one line), before any run starts, to resume a one-commit publication on a kind of CPU
    other than the one its saved or published runs name, where the runs this machine would make are compared with
    them — any of them, or, for a publication compared seed by seed (``cpu_per_seed``), those of the same seed: they
    could not be published together (:func:`check_one_commit`), hours later. A change of CPU kind alone moves a
    fine-tuning run as a change of seed does (docs/finetune.md, "The strength-matched control"). A seed whose runs are
    all made is left to whatever made it."""
    from ..records import machine  # looked up at the call: tests stand in another machine

    kept = PUBLICATIONS[publication]
    if not kept.one_commit:
        return
    here = cpu_kind(machine())
    wanted = sweep_runs(load(kept.config, root).get("finetune") or {})
    for folder, _ in partial_runs.sources(publication, root):
        compared = _compared_records(folder)
        saved = {run for _, _, run in compared}
        for seed, records in _groups(compared, kept.cpu_per_seed).items():
            if not any(run not in saved and seed in (None, run.seed) for run in wanted):
                continue  # nothing of this group left to make here
            others = {cpu: made for cpu, made in _cpus(records).items() if cpu != here}
            if others:
                cpu, made = next(iter(sorted(others.items())))
                whose = "runs" if seed is None else f"the runs of its seed {seed}"
                raise PublishError(
                    f"{made[0].relative_to(root)}: made on {cpu}, and this machine is {here}; {publication} compares "
                    f"{whose} made on one kind of CPU: resume it on {cpu}"
                )


def check_one_commit(runs: Path, *, cpu_per_seed: bool = False) -> None:
    """Refuse (PublishError, one line) runs under ``runs`` made at more than one commit or thread count, or at a
    checkout with uncommitted changes, counting a resumed run's first part at the commit that made it; or, among the
    runs that record their CPU (``machine.cpu``; older records do not), on more than one kind of CPU — or, with
    ``cpu_per_seed``, one seed's runs on more than one: a sweep whose runs are compared must differ only in what it
    varies."""
    records = _compared_records(runs)
    made = {record: _made(info) for record, info, _ in records}
    kinds = sorted({part for parts in made.values() for part in parts}, key=str)
    dirty = [r for r, parts in made.items() if any(d for _, d, _ in parts)]
    if len(kinds) > 1 or dirty:
        shown = ", ".join(f"{c[:7]}{' (dirty)' if d else ''} x {t} threads" for c, d, t in kinds)
        raise PublishError(
            f"{runs}: its compared runs were made at {shown}; this publication needs one clean commit and one thread "
            "count (rerun the odd ones in a worktree pinned at the sweep's commit)"
        )
    for seed, members in _groups(records, cpu_per_seed).items():
        cpus = _cpus(members)
        if len(cpus) > 1:
            shown = "; ".join(f"{len(r)} on {cpu} (e.g. {r[0].relative_to(runs)})" for cpu, r in sorted(cpus.items()))
            whose = "its compared runs" if seed is None else f"the runs of its seed {seed}"
            raise PublishError(
                f"{runs}: {whose} were made on more than one kind of CPU: {shown}; this publication needs one "
                "(rerun the odd ones on the others' kind)"
            )


def _provenance(publication: str, results: Path, root: Path, made_by: str | None) -> dict:
    return {
        "publication": publication,
        "section": PUBLICATIONS[publication].section,
        "made_by": made_by,
        "results_dir": os.path.relpath(results.resolve(), root.resolve()),
        "workflow_checkout": code_version(root),
        "published_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def publish(
    publication: str, results: Path, dest: Path, root: Path = Path("."), force: bool = False, made_by: str | None = None
) -> list[Path]:
    """Assemble ``publication``'s section of ``results`` beside dest, then rename it into dest's place; return the
    published files. dest is replaced only if it is an earlier publication (isoflow's marker file) or ``force`` is
    given; on any failure it stays as it was and nothing is left beside it."""
    section = SECTIONS[PUBLICATIONS[publication].section]
    where = results / section.name
    tables = sorted(p for p in (where / "tables").glob("*") if p.is_file())
    figures = sorted(p for p in (where / "figures").glob("*") if p.is_file())
    if not tables or not figures:
        raise PublishError(f"{where}: no tables or figures; run `snakemake {section.name}` with its config first")
    if PUBLICATIONS[publication].one_commit:
        check_one_commit(where / RUNS, cpu_per_seed=PUBLICATIONS[publication].cpu_per_seed)
    try:
        with atomic_dir(dest, expected=TOP_LEVEL, force=force, kind=f"published {publication} results") as staging:
            (staging / "PUBLISHED.json").write_text(
                json.dumps(_provenance(publication, results, root, made_by), indent=2) + "\n"
            )
            if (dest / "README.md").is_file():  # the discussion is written by hand: carried over
                shutil.copy2(dest / "README.md", staging / "README.md")
            for path in tables + figures:
                _copy(path, staging / path.parent.name / path.name)
            if section.published_runs == "listed":
                _copy_listed(results, where / "aggregate" / "runs.csv", staging, dest, root)
            else:
                _copy_tree(where / RUNS, staging, section.published_files)
    except OutputExistsError as err:
        raise PublishError(str(err).replace("--out", "another destination")) from None
    return sorted(p for p in dest.rglob("*") if p.is_file() and p.name != MARKER)


def _snakemake(command: list[str]) -> None:
    print("+ " + " ".join(command), flush=True)
    try:
        subprocess.run(command, cwd=ROOT, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    except subprocess.CalledProcessError as err:
        if any((ROOT / ".snakemake" / "locks").glob("*")):  # a run stopped by a kill or a session's end leaves it
            raise PublishError(_unlock_hint(command)) from err
        raise


def _unlock_hint(command: list[str]) -> str:
    """What to run where Snakemake refused for the lock a stopped run left: its unlock, with the command's config."""
    at = command.index("--configfile") if "--configfile" in command else len(command)
    unlock = " ".join(["snakemake", "--unlock", "--cores", "1", *command[at : at + 2]])
    return (
        f"Snakemake stopped with its lock in {ROOT / '.snakemake' / 'locks'} (left by a run that was killed): if no "
        f"other snakemake runs in this checkout, run `{unlock}`, then this command again"
    )


def _made_in_parts(publication: str, parts: dict, command: list[str]) -> str:
    """Resume a publication made in parts (its section's ``parts``; isoflow.publishing.partial): the saved parts' and
    the published runs' files put back, the parts still missing made one after another (``command`` with each part's
    missing runs as targets: its inputs, a checkpoint series, are made on this machine), then the tables and figures
    drawn from every run there by the section's redraw commands (as ``make redraw``: the workflow's report rule would
    want every part's inputs again); ``parts``: :func:`isoflow.publishing.partial.parts_of`'s. Returns what
    PUBLISHED.json adds to the command."""
    files = partial_runs.restore(publication, ROOT)
    results = partial_runs.results_of(publication, ROOT)
    made, planned = [], set()
    for part, runs in parts.items():
        planned |= {Path(run.path(results)) for run, _ in runs}
        missing = partial_runs.missing_runs(runs, results)
        if missing:
            print(f"{part}: {len(missing)} of {len(runs)} runs to make", flush=True)
            _snakemake([*command, *(f"{os.path.relpath(run.path(results), ROOT)}/{file}" for run, file in missing)])
            made.append(part)
    section = SECTIONS[PUBLICATIONS[publication].section]
    runs = results / section.name / RUNS
    present = {runs / rel.parent for rel in partial_runs.run_files(runs) if rel.name in section.published_files}
    if present - planned:  # a run of another config would enter the tables
        extra = sorted(present - planned)
        raise PublishError(f"{extra[0]}: a run {publication}'s config does not make ({len(extra)} such); remove it")
    with tempfile.TemporaryDirectory(prefix="isoflow-parts-") as tmp:
        for report in section.redraw(results / section.name, Path(tmp)):
            run_isoflow(*report)
    made_here = ", ".join(made) or "none"
    return f" (in parts: {files} files of earlier parts put back by scripts/partial_runs.py restore; made here: " + (
        f"{made_here})"
    )


def _resumed(publication: str, command: list[str]) -> str:
    """Put back what a resume of a publication saved run by run needs before ``command`` runs the missing runs: its
    runs' inputs built (the pretrained models it saved put back, not trained again), then its saved and published
    runs, dated after them. Returns what PUBLISHED.json adds to the command."""
    section = SECTIONS[PUBLICATIONS[publication].section]
    check_resumable_here(publication, ROOT)
    shared = SECTIONS[section.shares_runs_with].run_rules if section.shares_runs_with else ()
    if partial_runs.saved_inputs(publication, ROOT):  # pretrained models saved: put back, not trained again
        _snakemake([*command, "--omit-from", partial_runs.INPUT_RULE, *section.run_rules, *shared])
        for folder in partial_runs.restore_inputs(publication, ROOT):
            print(f"{folder.relative_to(ROOT)} restored", flush=True)
    _snakemake([*command, "--omit-from", *section.run_rules, *shared])
    sources = ", ".join(str(f.relative_to(ROOT)) for f, _ in partial_runs.sources(publication, ROOT)) or "nowhere"
    files = partial_runs.restore(publication, ROOT)
    print(f"{files} files of earlier runs restored", flush=True)
    for folder in partial_runs.restore_progress(publication, ROOT):
        print(f"{folder.relative_to(ROOT)}: the progress of an analysis stopped midway, restored", flush=True)
    # what PUBLISHED.json says: how many files came back, and from where (saved runs, published ones)
    return f" (resumed: {files} files of earlier runs put back by scripts/partial_runs.py restore from {sources})"


def reproduce(publication: str, snakemake_args: str = "", cores: int = 2, resume: bool = False) -> Path:
    """Run the publication's section with its config through the workflow (resumable: --rerun-incomplete), then
    publish it; the command run is what PUBLISHED.json records. With ``resume``, the runs saved in partial-results and
    those already published are put back first (scripts/partial_runs.py), after the inputs they were made from are
    built, so only the missing runs run; models the workflow pretrained, where they were saved with the runs, are put
    back before the inputs made from them, so they are not trained again; a publication made in parts makes only its
    missing parts (:func:`_made_in_parts`). Once published whole, the saved runs are removed."""
    pub = PUBLICATIONS[publication]
    options = ["--cores", str(cores), "--configfile", pub.config, "--rerun-incomplete", *shlex.split(snakemake_args)]
    command = ["snakemake", pub.section, *options]
    restored = ""
    parts = partial_runs.parts_of(publication, ROOT) if resume else None
    if parts is not None:  # its parts' missing runs, then the report
        restored = _made_in_parts(publication, parts, ["snakemake", *options])
        command = ["snakemake", *options, "<each part's missing runs>"]
    else:
        if resume:  # first the runs' inputs, none of the runs (istar's: nor optimize's, its λ = 0 rows)
            restored = _resumed(publication, command)
        _snakemake(command)
    results = partial_runs.results_of(publication, ROOT)
    dest = ROOT / PUBLISHED_RESULTS / publication
    made_by = " ".join(command) + restored
    publish(publication, results, dest, root=ROOT, made_by=made_by)
    if resume:
        partial_runs.discard(publication, ROOT)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("publication", choices=sorted(PUBLICATIONS))
    parser.add_argument(
        "results", type=Path, nargs="?", help="the workflow's results_dir, e.g. results/reproduce-offline"
    )
    parser.add_argument("dest", type=Path, nargs="?", help="e.g. docs/results/optimize")
    parser.add_argument(
        "--reproduce", action="store_true", help="run the workflow for the publication first (its config), then publish"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="with --reproduce: put back the saved (partial-results) and published runs first; only the missing run",
    )
    parser.add_argument("--snakemake-args", default="", help="with --reproduce: more options for snakemake")
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="the workflow's working directory, which the run list's paths are relative to",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace dest even if it holds files that are not an earlier publication"
    )
    parser.add_argument(
        "--made-by", default=None, help="the workflow command that made the results (recorded in PUBLISHED.json)"
    )
    args = parser.parse_args(argv)
    try:
        if args.reproduce:
            dest = reproduce(args.publication, args.snakemake_args, resume=args.resume)
            print(f"{dest}: published")
            return 0
        if args.results is None or args.dest is None:
            parser.error("give RESULTS and DEST, or --reproduce")
        files = publish(args.publication, args.results, args.dest, args.root, force=args.force, made_by=args.made_by)
    except (PublishError, subprocess.CalledProcessError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{args.dest}: {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
