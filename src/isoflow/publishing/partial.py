"""A publication's sweep in parts: its finished runs kept in the repository between machines, and put back before
the workflow resumes, so that only the missing runs run (what `make save-partial-<publication>` and
`make resume-<publication>` do; docs/workflow.md, "A sweep in parts").

    python scripts/partial_runs.py save finetune-plain     # <results_dir>/finetune/runs -> partial-results/...
    python scripts/partial_runs.py restore finetune-plain  # partial-results and the publication's runs -> results

Saved runs live in ``partial-results/<publication>/<section>/runs/`` (every file the section's run jobs wrote, each
record with its own commit and settings; for istar, optimize's runs too: its λ = 0 rows) beside ``PARTIAL.json`` (how
many, from which config, which checkout, when). Restoring copies the saved runs, and the publication's own published
runs (docs/results/<publication>/runs, unless its section publishes another section's runs too: istar's λ = 0 rows),
into the sections' runs folders of the config's results directory: files that are there already are left alone, and
the copies are all dated now, at one time, so Snakemake takes them as made after their inputs and none as newer
than a run made from it (restore *after* the inputs are built: ``publish_results.py --resume`` does). A run whose
job's outputs are not all restored (a publication that keeps only some of a run's files) is simply run again. Restored
runs are taken as they are: after changing a run setting of the config, delete the saved runs. A rerun of a published
section in parts (its runs measure something the published ones predate) saves with ``--rerun``: ``PARTIAL.json``
then says ``replaces_published``, every later save keeps saying it, and a resume puts back the saved runs only.

A publication made in parts whose runs read inputs too large to carry (the dynamics section: each series' runs read
its checkpoints, hundreds of MB, which stay on the machine that trained them; ``parts`` in its registry entry) is saved
otherwise: by whole parts only (a series with every run made; one with some is left for the next machine to make
again, whole, so that no series is measured on two pretrainings of it), and each run as its published files, a few KB
(``published_files``). Its resume (``publish_results.py --resume``) puts them back, makes only the parts missing, one
after another, and draws the report from every part's published files (its section's redraw commands), as ``make
redraw`` does from a publication's.

A layer analysis stopped midway (``<runs>/<model>/.<corpus>.partial``: hours of a real LM's layers) is carried too:
its description and measured layers (``isoflow.layers.partial.CARRIED``), under
``partial-results/<publication>/<section>/progress/``, put back where no progress of its own is; the next machine
encodes again and measures only the layers left.

The models the workflow pretrained for the section (``pretrain.models`` named in ``<section>.models``: 45 minutes or
more of CPU each, 21 MB) are saved too, under ``partial-results/<publication>/inputs/pretrained/<name>/``; a resume
builds their corpus, puts them back (dated after it) and only then the rest of the inputs, so that the next machine
does not train them again (``restore_inputs``; each model's record, ``pretrain.json``, says how it was made).
"""

from __future__ import annotations

import argparse
import filecmp
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ..atomic import IN_PROGRESS, atomic_dir
from ..config_files import load
from ..layers.partial import CARRIED
from ..layout import RUNS, RunId
from ..provenance import PARTIAL_RESULTS, PUBLISHED_RESULTS, code_version
from ..sections import PUBLICATIONS, SECTIONS
from . import ROOT


class PartialError(RuntimeError):
    pass


SCHEMA = ROOT / "schemas" / "config.schema.yaml"  # the code's schema (its defaults), whichever checkout is saved


def _is_temporary(rel: Path) -> bool:
    """isoflow's files and folders in the making (``.<name>.<random>.tmp...``; a layer analysis' or a fine-tuning run's
    progress, ``.<name>.partial``: gigabytes its own command resumes from), never a finished run's."""
    return any(part.startswith(".") and (".tmp" in part or part.endswith(IN_PROGRESS)) for part in rel.parts)


def run_files(runs: Path) -> list[Path]:
    """Every finished file under a runs folder, relative to it."""
    if not runs.is_dir():
        return []
    return sorted(
        p.relative_to(runs) for p in runs.rglob("*") if p.is_file() and not _is_temporary(p.relative_to(runs))
    )


PROGRESS = "progress"  # beside a saved section's runs: the progress of analyses stopped midway


def _progress_files(runs: Path) -> list[Path]:
    """The files of a layer analysis' progress a save carries (``CARRIED`` in each ``.<name>.partial`` folder under
    a runs folder, with at least one layer measured), relative to it."""
    if not runs.is_dir():
        return []
    found = []
    for folder in sorted(f for f in runs.rglob(f".*{IN_PROGRESS}") if f.is_dir()):
        files = sorted({f for pattern in CARRIED for f in folder.glob(pattern) if f.is_file()})
        if any(f.suffix == ".pkl" for f in files):
            found += [f.relative_to(runs) for f in files]
    return found


def _config(publication: str, root: Path) -> dict:
    return load(PUBLICATIONS[publication].config, root)


def workflow_config(publication: str, root: Path) -> dict:
    """The publication's config as the workflow reads it: its base merged under it, every default filled in."""
    from ..config_checks import load_workflow_schema
    from ..config_schema import fill_defaults

    return fill_defaults(_config(publication, root), load_workflow_schema(SCHEMA))


def parts_of(publication: str, root: Path) -> dict[str, list[tuple[RunId, str]]] | None:
    """The parts a publication is made in (its section's ``parts``: part -> [(run, the file its job is asked for)]),
    or None for a publication saved run by run."""
    parts = SECTIONS[PUBLICATIONS[publication].section].parts
    if parts is None:
        return None
    module, name = parts.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)(workflow_config(publication, root))


def missing_runs(runs: list[tuple[RunId, str]], results: Path) -> list[tuple[RunId, str]]:
    """The runs of a part not made under ``results``: no folder, or an empty one. A run's folder is written whole (its
    job's files, or, put back by a restore, its published files), but Snakemake makes the folder of a job's outputs
    before the job starts, so a job stopped midway leaves it there empty: a folder alone does not say the run was
    made."""
    return [(run, target) for run, target in runs if not _holds_files(Path(run.path(results)))]


def _holds_files(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def _split_parts(parts: dict[str, list[tuple[RunId, str]]], results: Path) -> tuple[dict, dict[str, str]]:
    """The parts whose every run is made under ``results``, and how far each begun other one is (``k of n runs``)."""
    whole, left = {}, {}
    for name, runs in parts.items():
        missing = len(missing_runs(runs, results))
        if not missing:
            whole[name] = runs
        elif missing < len(runs):
            left[name] = f"{len(runs) - missing} of {len(runs)} runs"
    return whole, left


def results_of(publication: str, root: Path) -> Path:
    """The results directory of the publication's config."""
    return root / _config(publication, root)["results_dir"]


# The rule that makes the inputs a save carries (rules/pretrain.smk): a resume builds every other input first.
INPUT_RULE = "pretrain_model"


def carried_inputs(publication: str, root: Path) -> list[Path]:
    """The folders, relative to the config's data_dir, of the models the workflow pretrains (``pretrain.models``) that
    the publication's section uses (``<section>.models``): the inputs a save carries to the next machine."""
    config = _config(publication, root)
    used = (config.get(PUBLICATIONS[publication].section) or {}).get("models") or []
    pretrained = (config.get("pretrain") or {}).get("models") or {}
    return [Path("pretrained") / name for name in used if name in pretrained]


def _data_of(publication: str, root: Path) -> Path:
    return root / _config(publication, root).get("data_dir", "data")


def _sections(publication: str) -> list[str]:
    """The sections whose runs a publication's runs are: its own, and the one it reuses runs of (istar: optimize's,
    its λ = 0 rows)."""
    section = SECTIONS[PUBLICATIONS[publication].section]
    return [section.name, *([section.shares_runs_with] if section.shares_runs_with else [])]


def replaces_published(publication: str, root: Path = ROOT) -> bool:
    """Whether the saved runs of ``publication`` are a rerun that replaces its published runs (saved with
    ``rerun``): a resume then puts back none of the published ones."""
    info = root / PARTIAL_RESULTS / publication / "PARTIAL.json"
    return info.is_file() and bool(json.loads(info.read_text()).get("replaces_published"))


def save(publication: str, root: Path = ROOT, rerun: bool = False) -> Path:
    """Copy the finished runs of the publication's sections (under the config's results directory) into
    partial-results/<publication>/<section>/runs, replacing an earlier save of the same publication; return that
    folder. ``rerun``: these runs replace the published ones (kept by every later save of the same parts)."""
    pub = PUBLICATIONS[publication]
    rerun = rerun or replaces_published(publication, root)
    results = results_of(publication, root)
    found = {name: run_files(results / name / RUNS) for name in _sections(publication)}
    progress = {name: _progress_files(results / name / RUNS) for name in _sections(publication)}
    parts = parts_of(publication, root)
    whole, left = _split_parts(parts or {}, results)
    if parts is not None:  # whole parts only, each run as its published files; no progress (its inputs stay behind)
        runs = results / pub.section / RUNS
        kept = {Path(run.path(results)).relative_to(runs) for made in whole.values() for run, _ in made}
        published = SECTIONS[pub.section].published_files
        found[pub.section] = [rel for rel in found[pub.section] if rel.parent in kept and rel.name in published]
        progress[pub.section] = []
    if not found[pub.section] and not progress[pub.section]:
        begun = f" (begun, not whole: {'; '.join(f'{n}, {made}' for n, made in left.items())})" if left else ""
        raise PartialError(
            f"{results / pub.section / RUNS}: no finished runs to save{begun}; run `make resume-{publication}` first"
        )
    data = _data_of(publication, root)
    inputs = [rel for rel in carried_inputs(publication, root) if (data / rel).is_dir()]
    dest = root / PARTIAL_RESULTS / publication
    expected = {*found, "PARTIAL.json", "inputs"}
    with atomic_dir(dest, expected=expected, kind=f"saved runs of {publication}") as staging:
        for kind, files_of in ((RUNS, found), (PROGRESS, progress)):
            for name, files in files_of.items():
                for rel in files:
                    (staging / name / kind / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(results / name / RUNS / rel, staging / name / kind / rel)
        for rel in inputs:
            shutil.copytree(data / rel, staging / "inputs" / rel)
        every = [rel for files in found.values() for rel in files]
        stopped = sorted({str(rel.parent) for files in progress.values() for rel in files})
        (staging / "PARTIAL.json").write_text(
            json.dumps(
                {
                    "publication": publication,
                    "config": pub.config,
                    "files": len(every),
                    "records": sum(1 for rel in every if rel.suffix == ".json"),
                    "from": [str((results / name / RUNS).relative_to(root)) for name in found],
                    "inputs": [str((data / rel).relative_to(root)) for rel in inputs],
                    **({"progress": stopped} if stopped else {}),
                    **({"parts": sorted(whole), "parts_left": left} if parts is not None else {}),
                    "workflow_checkout": code_version(root),
                    "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    **({"replaces_published": True} if rerun else {}),
                },
                indent=2,
            )
            + "\n"
        )
    return dest


def sources(publication: str, root: Path = ROOT) -> list[tuple[Path, str]]:
    """(runs folder, section it goes to) a resume restores from: the saved runs, then the published ones (only if
    they are all the section's own: istar's publication holds optimize's runs among its own, at their paths; and not
    when the saved runs replace them)."""
    section = SECTIONS[PUBLICATIONS[publication].section]
    found = [(root / PARTIAL_RESULTS / publication / name / RUNS, name) for name in _sections(publication)]
    if section.shares_runs_with is None and not replaces_published(publication, root):
        found.append((root / PUBLISHED_RESULTS / publication / RUNS, section.name))
    return [(folder, name) for folder, name in found if folder.is_dir()]


def restore(publication: str, root: Path = ROOT) -> int:
    """Copy the saved and published runs into their sections' runs folders under the config's results directory,
    leaving what is there; return the number of files copied. The copies are dated now (see the module docstring), and
    so are the files already there that are the same bytes as a saved or published copy: an earlier restore, stopped
    before its runs were taken as done, left them dated then, older than the inputs this resume has just built, and
    Snakemake would run them again."""
    results = results_of(publication, root)
    copied, dated = [], []
    for source, name in sources(publication, root):
        for rel in run_files(source):
            target = results / name / RUNS / rel
            if target.exists():
                if target not in dated and filecmp.cmp(source / rel, target, shallow=False):
                    dated.append(target)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, target)
            copied.append(target)
    # One date for every copy, now (after the inputs the workflow just built): restored runs can be each other's
    # inputs (the learning-rate runs, then the choice read from them, then the sweep's runs), and copies dated one
    # by one in file order would make a choice older than its runs, and every run after it out of date.
    now = time.time_ns()
    for target in copied + dated:
        os.utime(target, ns=(now, now))
    return len(copied)


def restore_progress(publication: str, root: Path = ROOT) -> list[Path]:
    """Put the saved progress of analyses stopped midway back into the runs folders, each folder whole, where the
    analysis has neither progress of its own nor a finished output; return the progress folders restored."""
    results = results_of(publication, root)
    restored = []
    for name in _sections(publication):
        saved = root / PARTIAL_RESULTS / publication / name / PROGRESS
        for folder in sorted(saved.rglob(f".*{IN_PROGRESS}")) if saved.is_dir() else []:
            target = results / name / RUNS / folder.relative_to(saved)
            finished = target.with_name(target.name[1 : -len(IN_PROGRESS)])
            if target.exists() or finished.exists():
                continue
            _copy_whole(folder, target)
            restored.append(target)
    return restored


def _copy_whole(saved: Path, target: Path) -> None:
    """Copy the folder ``saved`` to ``target`` whole or not at all (staged beside it, then renamed), dated now."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        shutil.copytree(saved, staging / "copy", copy_function=shutil.copyfile)
        os.replace(staging / "copy", target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def saved_inputs(publication: str, root: Path = ROOT) -> list[Path]:
    """The carried inputs saved for the publication (folders under partial-results/<publication>/inputs)."""
    saved = root / PARTIAL_RESULTS / publication / "inputs"
    return [saved / rel for rel in carried_inputs(publication, root) if (saved / rel).is_dir()]


def restore_inputs(publication: str, root: Path = ROOT) -> list[Path]:
    """Put the saved inputs (pretrained models) back under the config's data_dir where they are missing, each folder
    whole or not at all, dated now (after the corpus they were trained on, which the resume built first); return the
    folders restored."""
    data = _data_of(publication, root)
    restored = []
    for saved in saved_inputs(publication, root):
        target = data / saved.relative_to(root / PARTIAL_RESULTS / publication / "inputs")
        if target.exists():
            continue
        _copy_whole(saved, target)
        restored.append(target)
    return restored


def discard(publication: str, root: Path = ROOT) -> None:
    """Remove a publication's saved runs (once it is published whole, they are in docs/results)."""
    shutil.rmtree(root / PARTIAL_RESULTS / publication, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("save", "restore"))
    parser.add_argument("publication", choices=sorted(PUBLICATIONS))
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="save: these runs replace the published ones (a rerun in parts); a resume then puts back none of those",
    )
    args = parser.parse_args(argv)
    if args.rerun and args.action != "save":
        parser.error("--rerun goes with save")
    if args.action == "save":
        try:
            dest = save(args.publication, ROOT, rerun=args.rerun)
        except PartialError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        saved = json.loads((dest / "PARTIAL.json").read_text())
        replacing = "; a resume puts back none of the published runs" if saved.get("replaces_published") else ""
        print(f"{dest.relative_to(ROOT)}: {saved['records']} run records, {saved['files']} files{replacing}; commit it")
        if saved.get("parts_left"):
            left = ", ".join(f"{name} ({made})" for name, made in saved["parts_left"].items())
            print(f"not saved, a part is saved whole: {left}; the next resume makes them again")
    else:
        where = results_of(args.publication, ROOT).relative_to(ROOT)
        for folder in restore_inputs(args.publication, ROOT):
            print(f"{folder.relative_to(ROOT)} restored")
        print(f"{restore(args.publication, ROOT)} files restored under {where}")
        for folder in restore_progress(args.publication, ROOT):
            print(f"{folder.relative_to(ROOT)}: the progress of an analysis stopped midway, restored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
