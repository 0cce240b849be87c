"""Layer analyses compared with their namesakes made elsewhere: what moved, table by table and column by column.

A layer analysis made again — at a later commit (a measure's arithmetic changed: the spectrum's float64 products,
the forward passes of similar lengths), at another thread count, on another kind of CPU — is compared with the one
made before (``isoflow layers-same-as OLD NEW --out DIR``): for every analysis both runs folders hold
(:class:`~isoflow.layers.runs.Analysis`, by its ``meta.json``), each table of the run (``layers``, ``kmeans``,
``clusters``, ``dims``, ``types``, ``cka``, ``pca``) is compared column by column
(:func:`isoflow.reporting.frame_difference.frames_difference`: the largest absolute and relative difference of each
column that differs), with the settings that differ and both runs' commits, threads and machines. A published number
then holds (equal, or within the rounding a column's arithmetic allows) or its move is in the table.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ..reporting.frame_difference import frames_difference, provenance_of
from .runs import Analysis

TABLES = ("layers", "kmeans", "clusters", "dims", "types", "cka", "pca")  # a run's tables, each <name>.parquet
META = "meta.json"


def compare_runs(run: str | os.PathLike, other: str | os.PathLike) -> dict:
    """The analysis in folder ``run`` against ``other`` of the same model and corpus (module docstring); JSON-ready."""
    run, other = Path(run), Path(other)
    a, b = (json.loads((p / META).read_text()) for p in (run, other))
    if (a["model"], a["corpus"]) != (b["model"], b["corpus"]):
        raise ValueError(
            f"{other}: the analysis of {b['model']} over {b['corpus']}, not of {a['model']} over {a['corpus']}; "
            "compare an analysis with its namesake"
        )
    tables = {
        name: frames_difference(pd.read_parquet(run / f"{name}.parquet"), pd.read_parquet(other / f"{name}.parquet"))
        for name in TABLES
        if (run / f"{name}.parquet").is_file() and (other / f"{name}.parquet").is_file()
    }
    mine, theirs = a.get("settings") or {}, b.get("settings") or {}
    return {
        "model": a["model"],
        "corpus": a["corpus"],
        "run": str(run),
        "other": str(other),
        "identical": all(t["equal"] for t in tables.values()),
        "tables": tables,
        "tables_in_one_only": sorted(
            name for name in TABLES if (run / f"{name}.parquet").is_file() != (other / f"{name}.parquet").is_file()
        ),
        "settings_differing": sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k)),
        "provenance": [provenance_of(a), provenance_of(b)],
    }


def compare_folders(old: str | os.PathLike, new: str | os.PathLike) -> tuple[list[dict], list[str], list[str]]:
    """:func:`compare_runs` of every analysis both runs folders hold (each ``<model>/<corpus>/meta.json``), ``new``'s
    against ``old``'s, by identity; and the identities in ``old`` only and in ``new`` only."""
    found = [{run.identity(): path.parent for run, path in Analysis.found_in(f, "/" + META)} for f in (old, new)]
    both = [i for i in found[1] if i in found[0]]
    only = [sorted(set(found[0]) - set(found[1])), sorted(set(found[1]) - set(found[0]))]
    return [compare_runs(found[0][i], found[1][i]) for i in both], *only


CAPTION = (
    "What moved between layer analyses of the same model and corpus made twice (old, then new): per table of the run "
    "and column, the largest absolute and relative difference (|old − new| / max(|old|, |new|)) over its rows; a "
    "column not listed is equal bit for bit; nan_changed: its values that are NaN in one run only (no difference to "
    "measure). Commits, threads and machines (after a semicolon): the old run's, then "
    "the new one's."
)


def moves_table(compared: list[dict]) -> pd.DataFrame:
    """One row per analysis × table × column that differs (:func:`compare_runs`' results), largest move first within
    an analysis; an identical analysis gets one row, its column empty."""
    rows = []
    for c in compared:
        runs = {
            "commits": " ".join(str(p["git_commit"])[:7] for p in c["provenance"]),
            "threads": " ".join(str(p["threads"]) for p in c["provenance"]),
            "machines": "; ".join(str((p.get("machine") or {}).get("cpu", "not recorded")) for p in c["provenance"]),
        }
        moved = [
            {"table": name, "column": col, "largest_difference": t["columns_differing"][col],
             "largest_relative": t["relative_differing"][col],
             "nan_changed": t["nan_differing"].get(col, 0)}  # fmt: skip
            for name, t in c["tables"].items()
            for col in t["columns_differing"]
        ]
        moved.sort(key=lambda r: (TABLES.index(r["table"]), -r["largest_relative"]))
        nothing = {"table": "", "column": "", "largest_difference": 0.0, "largest_relative": 0.0, "nan_changed": 0}
        for row in moved or [nothing]:
            rows.append({"model": c["model"], "corpus": c["corpus"], **row, **runs})
    return pd.DataFrame(rows)
