"""Layer analyses compared with their namesakes made elsewhere: what moved, table by table and column by column.

A layer analysis made again — at a later commit (a measure's arithmetic changed: the spectrum's float64 products,
the forward passes of similar lengths), at another thread count, on another kind of CPU — is compared with the one
made before (``isoflow layers-same-as OLD NEW --out DIR``): for every run both runs folders hold — each analysis
(:class:`~isoflow.layers.runs.Analysis`, by its ``meta.json``: its tables ``layers``, ``kmeans``, ``clusters``,
``dims``, ``types``, ``cka``, ``pca``) and each comparison of two models (:class:`~isoflow.layers.runs.CrossComparison`,
by its ``cross.json``: its table ``cross``) — every table is compared column by column
(:func:`isoflow.reporting.frame_difference.frames_difference`: the largest absolute and relative difference of each
column that differs), with the settings that differ and both runs' commits, threads and machines. A published number
then holds (equal, or within the rounding a column's arithmetic allows) or its move is in the table.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pandas as pd

from ..records import cpu_kind_label
from ..reporting.frame_difference import frames_difference, provenance_of, settings_differing
from .runs import Analysis, CrossComparison

TABLES = ("layers", "kmeans", "clusters", "dims", "types", "cka", "pca")  # an analysis' tables, each <name>.parquet
META = "meta.json"
# Each kind of run: its run id, its record (beside its tables), its tables
KINDS = ((Analysis, META, TABLES), (CrossComparison, "cross.json", ("cross",)))


def compare_runs(run: str | os.PathLike, other: str | os.PathLike) -> dict:
    """The run in folder ``run`` (an analysis or a comparison of two models) against ``other``, its namesake (module
    docstring); JSON-ready."""
    run, other = Path(run), Path(other)
    kind, record, names = next((k for k in KINDS if (run / k[1]).is_file()), KINDS[0])
    a, b = (json.loads((p / record).read_text()) for p in (run, other))
    fields = [f.name for f in dataclasses.fields(kind)]
    mine_id, theirs_id = (kind(**{f: r[f] for f in fields}).identity() for r in (a, b))
    if mine_id != theirs_id:
        raise ValueError(f"{other}: the run {theirs_id}, not {mine_id}; compare a run with its namesake")
    held = [{name for name in names if (p / f"{name}.parquet").is_file()} for p in (run, other)]
    tables = {
        name: frames_difference(pd.read_parquet(run / f"{name}.parquet"), pd.read_parquet(other / f"{name}.parquet"))
        for name in names
        if name in held[0] & held[1]
    }
    return {
        "identity": mine_id,
        "run": str(run),
        "other": str(other),
        "identical": all(t["equal"] for t in tables.values()),
        "tables": tables,
        "tables_in_one_only": sorted(held[0] ^ held[1]),
        "settings_differing": settings_differing(a.get("settings") or {}, b.get("settings") or {}),
        "provenance": [provenance_of(a), provenance_of(b)],
    }


def compare_folders(old: str | os.PathLike, new: str | os.PathLike) -> tuple[list[dict], list[str], list[str]]:
    """:func:`compare_runs` of every run both runs folders hold (analyses, then comparisons of two models), ``new``'s
    against ``old``'s, by identity; and the identities in ``old`` only and in ``new`` only."""
    compared, only_old, only_new = [], [], []
    for kind, record, _ in KINDS:
        found = [{run.identity(): path.parent for run, path in kind.found_in(f, "/" + record)} for f in (old, new)]
        compared += [compare_runs(found[0][i], found[1][i]) for i in found[1] if i in found[0]]
        only_old += sorted(set(found[0]) - set(found[1]))
        only_new += sorted(set(found[1]) - set(found[0]))
    return compared, only_old, only_new


CAPTION = (
    "What moved between layer runs of the same identity made twice (old, then new: an analysis <model>/<corpus>, or a "
    "comparison of two models cross/<a>/<b>/<corpus>): per table of the run "
    "and column, the largest absolute and relative difference (|old − new| / max(|old|, |new|)) over its rows; a "
    "column not listed is equal bit for bit; nan_changed: its values that are NaN in one run only (no difference to "
    "measure). Commits, threads and machines (after a semicolon): the old run's, then "
    "the new one's."
)


def moves_table(compared: list[dict]) -> pd.DataFrame:
    """One row per run × table × column that differs (:func:`compare_runs`' results), largest move first within a
    run's table; an identical run gets one row, its column empty."""
    rows, order = [], [name for _, _, names in KINDS for name in names]
    for c in compared:
        runs = {
            "commits": " ".join(str(p["git_commit"])[:7] for p in c["provenance"]),
            "threads": " ".join(str(p["threads"]) for p in c["provenance"]),
            "machines": "; ".join(cpu_kind_label(p.get("machine")) for p in c["provenance"]),
        }
        moved = [
            {"table": name, "column": col, "largest_difference": t["columns_differing"][col],
             "largest_relative": t["relative_differing"][col],
             "nan_changed": t["nan_differing"].get(col, 0)}  # fmt: skip
            for name, t in c["tables"].items()
            for col in t["columns_differing"]
        ]
        moved.sort(key=lambda r: (order.index(r["table"]), -r["largest_relative"]))
        nothing = {"table": "", "column": "", "largest_difference": 0.0, "largest_relative": 0.0, "nan_changed": 0}
        for row in moved or [nothing]:
            rows.append({"run": c["identity"], **row, **runs})
    return pd.DataFrame(rows)
