"""Run records on disk, for every section: one schema for what a run records of itself (:func:`run_record`), where
λ runs go (:mod:`isoflow.layout`), reading exactly the runs asked for, checking they belong together, and the aggregate.

Every section's run record (a run's ``<stem>.json``; the layer analysis' ``meta.json``; a pretrained model's
``pretrain.json``) has the same frame: ``section`` (the section it belongs to: where it lives is
``<results>/<section>/runs/``), ``settings``, what the run measured of itself, ``diverged`` / ``diverged_at`` /
``diverged_unit`` (``step`` or ``epoch``), the provenance (``versions``, ``code``, ``threads``, ``machine``: the
CPU) and ``"complete": true``, written last. An optimisation run is two files with one stem: ``<stem>.parquet``
(one row per recorded state) and ``<stem>.json``. :func:`load_runs` reads the runs it is given and nothing
else (the workflow passes the runs its rule declares); :func:`discover` lists the complete runs under a results
directory, for interactive use.

Runs are averaged over seeds only when they agree on everything else: every setting but the seed must be equal
within a row of the tables (task × model, and the I-STAR weight where present); otherwise :func:`load_runs`
raises an error naming the runs and the settings in which they differ.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .atomic import atomic_dir, atomic_file
from .errors import read_json

# Settings that identify a row of the tables (besides task and model), with the value of runs that do not record
# them; the seed is what rows average over. istar_lambda always; the others where some run records them.
ROW_DEFAULTS = {"istar_lambda": 0.0, "reg": "istar", "cosreg_weight": 0.0}
ROW_SETTINGS = tuple(ROW_DEFAULTS)
# Settings that say which measurements a run adds beside its trajectory, never what it trained or its columns' values:
# runs that differ only in these are still seeds of one row (extra_every, when measurements are taken, is compared).
NOT_COMPARED = ("extra_metrics",)
# Run information carried into runs.csv.
INFO_FIELDS = (
    "n_items",
    "n_examples",
    "dim",
    "n_labels",
    "n_params",
    "pair",
    "multilabel",
    "seconds_per_update",
    "device",
    "diverged",
    "diverged_at",
)
# The schema's divergence fields under their earlier, per-section names (records written before one schema).
LEGACY_DIVERGED_AT = {"diverged_at_step": "step", "diverged_at_epoch": "epoch"}


def machine() -> dict:
    """The CPU a run ran on: its model name (Linux's /proc/cpuinfo; the platform's word elsewhere), the instruction set
    torch's CPU kernels use and the cores. Float results depend on it as on the thread count (the kernels' blocking
    and vector width set the order of their sums): two runs that must agree bit for bit ran on the same kind."""
    import os
    import platform

    import torch

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return {"cpu": model, "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cores": os.cpu_count()}


def cpu_kind(machine: dict | None) -> str | None:
    """The kind of CPU a record's ``machine`` (:func:`machine`) names, as runs that must agree bit for bit share it:
    the model name and the instruction set torch's kernels use, since one name covers machines that sum in different
    orders (two "AMD EPYC" kinds, one with AVX-512 and one with AVX2, made the fair sweep's runs two ways:
    docs/results/finetune-smollm2-fair-rerun). None for a record that names no machine.

    >>> cpu_kind({"cpu": "AMD EPYC", "cpu_capability": "AVX2", "cores": 2})
    'AMD EPYC (AVX2)'
    """
    if not (machine or {}).get("cpu"):
        return None
    capability = machine.get("cpu_capability")
    return f"{machine['cpu']} ({capability})" if capability else machine["cpu"]


def cpu_kind_label(machine: dict | None) -> str:
    """:func:`cpu_kind` as a table writes it: "not recorded" for a record that names no machine.

    >>> cpu_kind_label(None)
    'not recorded'
    """
    return cpu_kind(machine) or "not recorded"


def run_provenance() -> dict:
    """What every run's record says about what made it: package versions, the code's git commit (and whether its
    tree was dirty), torch's thread count and the machine's CPU (:func:`machine`)."""
    import platform

    import numpy
    import torch

    from .provenance import code_version
    from .version import __version__

    return {
        "versions": {
            "isoflow": __version__,
            "torch": torch.__version__,
            "numpy": numpy.__version__,
            "pandas": pd.__version__,
            "python": platform.python_version(),
        },
        "code": code_version(),
        "threads": torch.get_num_threads(),
        "machine": machine(),
    }


class RecordError(ValueError):
    """A run record is missing, incomplete or unreadable, or runs that must agree do not (the message names them)."""


def run_record(
    section: str, settings: dict, measured: dict, *, diverged_at: int | None = None, unit: str = "step"
) -> dict:
    """A run's record in the one schema every section shares (see the module docstring); ``measured``: what the run
    recorded of itself (sizes, timings, held-out set, ...)."""
    if unit not in ("step", "epoch"):
        raise ValueError(f"diverged_unit must be step or epoch; got {unit!r}")
    return {
        "section": section,
        "settings": settings,
        **measured,
        "diverged": diverged_at is not None,
        "diverged_at": diverged_at,
        "diverged_unit": unit,
        **run_provenance(),
        "complete": True,
    }


def write_run(record_path: str | os.PathLike, record: dict, tables=()) -> Path:
    """A run's files written as one, every section's way: its tables (``(path, DataFrame)`` pairs, parquet), then its
    record (``record_path``, JSON) last, each through a temp file and a rename. The record an earlier run left there
    is removed first, so that a write interrupted or failed half-way leaves no record vouching for new tables; an
    interrupted run writes nothing. Returns the record's path."""
    from . import interrupt

    interrupt.check()
    record_path = Path(record_path)
    record_path.unlink(missing_ok=True)
    for path, frame in tables:
        with atomic_file(path) as tmp:
            frame.to_parquet(tmp, index=False)
    with atomic_file(record_path) as tmp:
        tmp.write_text(json.dumps(record, indent=2, default=float) + "\n")
    return record_path


def write_run_folder(
    out: str | os.PathLike, record_name: str, record: dict, write_files, *, expected, force=False, kind
):
    """A run that is one folder (a layer analysis, a pretrained model) written as one, the way :func:`write_run` writes
    a run's files: ``write_files(tmp)`` writes its files into a temporary folder beside ``out``, the record
    (``record_name``, JSON) is written last, and the folder takes ``out``'s place only then
    (:func:`isoflow.atomic.atomic_dir`, which refuses to replace what ``expected`` and ``force`` do not allow). An
    interrupted run writes nothing. Returns ``out``."""
    from . import interrupt

    interrupt.check()
    with atomic_dir(out, expected=expected, force=force, kind=kind) as tmp:
        write_files(tmp)
        (tmp / record_name).write_text(json.dumps(record, indent=2, default=float) + "\n")
    return Path(out)


def normalised(info: dict) -> dict:
    """A record in the one schema, whatever schema it was written in (earlier records: ``diverged_at_step`` /
    ``diverged_at_epoch``, ``diverged`` only when true)."""
    info = dict(info)
    for key, unit in LEGACY_DIVERGED_AT.items():
        if key in info:
            info.setdefault("diverged_at", info.pop(key))
            info.setdefault("diverged_unit", unit)
    info.setdefault("diverged", False)
    info.setdefault("diverged_at", None)
    return info


def record_pair(path: str | os.PathLike) -> tuple[Path, Path]:
    """(parquet, json) of a run named by either file or by its stem."""
    p = Path(path)
    stem = p.with_suffix("") if p.suffix in (".parquet", ".json") else p
    return stem.with_suffix(".parquet"), stem.with_suffix(".json")


def read_record(meta: Path) -> dict:
    info = read_json(
        meta,
        missing=lambda: RecordError(
            f"{meta} is missing: that run did not complete (or was removed); run it again or leave it out"
        ),
        invalid=lambda exc: RecordError(
            f"{meta} is not a valid run record ({exc}); delete the run's .json and .parquet and run it again"
        ),
    )
    if not isinstance(info, dict) or not info.get("complete") or "settings" not in info:
        raise RecordError(f"{meta} does not record a complete run; run it again or leave it out")
    return normalised(info)


def settings_row(info: dict, meta: Path) -> dict:
    """One row of runs.csv: every setting (lists as text), run sizes, code version and the record's path."""
    s = info["settings"]
    row = {k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in s.items()}
    row.update({k: info.get(k) for k in INFO_FIELDS})
    code = info.get("code") or {}
    row.update(git_commit=code.get("git_commit"), git_dirty=code.get("git_dirty"), record=str(meta))
    return row


def load_runs(paths: Iterable[str | os.PathLike]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exactly the given runs: (tidy per-step frame, one row per run). Errors name the file and the fix."""
    frames, rows = [], []
    compared: set[str] = set()  # every setting any run records
    seen: dict[Path, str] = {}
    for path in paths:
        parquet, meta = record_pair(path)
        if meta.resolve() in seen:
            raise RecordError(f"{meta} is listed twice")
        seen[meta.resolve()] = str(meta)
        info = read_record(meta)
        try:
            frame = pd.read_parquet(parquet)
        except FileNotFoundError:
            raise RecordError(f"{parquet} is missing although {meta} says the run completed; run it again") from None
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for corrupt files
            raise RecordError(f"{parquet} could not be read ({type(exc).__name__}: {exc}); run it again") from exc
        row = settings_row(info, meta)
        compared.update(info["settings"])
        frames.append(frame)
        rows.append(row)
    if not frames:
        raise RecordError("no runs given")
    keys = [k for k in ROW_SETTINGS if k == "istar_lambda" or k in compared]
    for frame, row in zip(frames, rows):  # rows of the tables: a run without the setting has its default
        for key in keys:
            value = row.get(key)
            row[key] = frame[key] = ROW_DEFAULTS[key] if value is None or (value != value) else value
    info = pd.DataFrame(rows)
    check_consistent(info, sorted(compared))
    return pd.concat(frames, ignore_index=True), info


def row_label(values, keys=ROW_SETTINGS) -> str:
    """``task x model`` (and ``istar_lambda = ...`` etc. where not the default) for messages."""
    task, model, *rest = values
    extra = [
        f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in zip(keys, rest) if v != ROW_DEFAULTS[k]
    ]
    return " x ".join([str(task), str(model), *extra])


def check_consistent(info: pd.DataFrame, settings: list[str] | None = None) -> None:
    """Runs in one row of the tables (same task, model and row settings) must differ only in their seed: every other
    setting (``settings``: the columns that are settings; default all but the run information) must agree."""
    present = [k for k in ROW_SETTINGS if k in info.columns]
    key = ["task", "model", *present]
    candidates = (
        settings
        if settings is not None
        else [c for c in info.columns if c not in (*INFO_FIELDS, "git_commit", "git_dirty", "record")]
    )
    compared = [c for c in candidates if c in info.columns and c not in (*key, *NOT_COMPARED, "seed")]
    for values, group in info.groupby(key, dropna=False):
        dup = group[group.duplicated("seed", keep=False)]
        if len(dup):
            raise RecordError(
                f"{row_label(values, present)}: seed {dup['seed'].iloc[0]} appears more than once "
                f"({', '.join(dup['record'])}); keep one run per seed"
            )
        differ = [c for c in compared if group[c].astype(str).nunique() > 1]
        if differ:
            shown = "; ".join(
                f"{c}: " + ", ".join(f"{v} ({r})" for v, r in zip(group[c].astype(str), group["record"]))
                for c in differ
            )
            raise RecordError(
                f"runs of {row_label(values, present)} differ in {', '.join(differ)}, not only in their seed, and "
                f"cannot be "
                f"averaged as seeds: {shown}. Re-run them with the same settings, or aggregate them separately"
            )


AGGREGATE_FILES = ("trajectories.parquet", "runs.csv")


def aggregate(paths: Iterable[str | os.PathLike], out: str | os.PathLike) -> list[Path]:
    """The given runs in one table: ``out/trajectories.parquet`` (per step) and ``out/runs.csv`` (one row per run,
    with every setting, the code commit and the record's path). Returns the paths written."""
    traj, info = load_runs(paths)
    written = [Path(out) / name for name in AGGREGATE_FILES]
    with atomic_file(written[0]) as tmp:
        traj.to_parquet(tmp, index=False)
    with atomic_file(written[1]) as tmp:
        info.to_csv(tmp, index=False)
    return written


def load_aggregate(path: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-step frame, run info) as written by :func:`aggregate`."""
    path = Path(path)
    files = [path / name for name in AGGREGATE_FILES]
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"{f} is missing; run `isoflow optimize-aggregate --out {path}` first")
    return pd.read_parquet(files[0]), pd.read_csv(files[1])
