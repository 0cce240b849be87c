"""What each published section cost, read from its committed run records (docs/results/<publication>/runs).

Not a test. For every publication: its runs, the device and threads they ran on (as recorded), the total and median
seconds per run, and what a run's seconds are made of (per section: optimisation set-up + loop; fine-tuning training +
evaluation + Σ_S; a layer analysis's every stage; pretraining's total). Writes
``benchmarks/results/section-budgets.json`` and ``.md`` (the table docs/performance.md and docs/workflow.md link).
Run: ``python benchmarks/section_budgets.py`` (seconds; it reads JSON only). A section whose records keep no time
(stability) says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "docs" / "results"
OUT = Path(__file__).parent / "results" / "section-budgets"

# What a record's time is, by the keys it has (the first rule that matches).
RULES = [
    (("setup_seconds", "loop_seconds"), "set-up + loop"),
    (("train_seconds", "eval_seconds", "shrinkage_seconds"), "training + evaluation + Σ_S"),
]


def record_seconds(path: Path, record: dict) -> tuple[float, str] | None:
    """A run's seconds and what they count, or None for a file that is not a timed run record."""
    for keys, what in RULES:
        if all(isinstance(record.get(k), (int, float)) for k in keys):
            return float(sum(record[k] for k in keys)), what
    if path.name == "meta.json" and isinstance(record.get("seconds"), dict):
        return float(sum(record["seconds"].values())), "every stage (encoding, each layer)"
    if path.name == "pretrain.json" and isinstance(record.get("seconds"), (int, float)):
        return float(record["seconds"]), "the whole training"
    return None


def publication_budget(folder: Path) -> dict:
    runs, devices, threads, what = [], set(), set(), set()
    for path in sorted((folder / "runs").rglob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        timed = record_seconds(path, record) if isinstance(record, dict) else None
        if timed is None:
            continue
        runs.append(timed[0])
        what.add(timed[1])
        devices.add(str(record.get("device", "not recorded")))
        threads.add(str(record.get("threads", "not recorded")))
    if not runs:
        return {"publication": folder.name, "runs": 0, "note": "its records keep no time"}
    return {
        "publication": folder.name,
        "runs": len(runs),
        "device": ", ".join(sorted(devices)),
        "threads": ", ".join(sorted(threads)),
        "hours": sum(runs) / 3600,
        "median_run_seconds": statistics.median(runs),
        "counts": "; ".join(sorted(what)),
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        "| publication | runs | device (threads) | total | median run | a run's time counts |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if not r["runs"]:
            lines.append(f"| {r['publication']} | – | – | – | – | {r['note']} |")
            continue
        lines.append(
            f"| {r['publication']} | {r['runs']} | {r['device']} ({r['threads']}) | {r['hours']:.2f} h | "
            f"{r['median_run_seconds']:.0f} s | {r['counts']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where <out>.json and <out>.md go")
    out = parser.parse_args().out
    rows = [publication_budget(f) for f in sorted(PUBLISHED.iterdir()) if (f / "runs").is_dir()]
    out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    header = (
        "# What each publication cost, from its run records\n\n"
        "Written by `python benchmarks/section_budgets.py` from `docs/results/*/runs` (each run's own record of its\n"
        "device, threads and seconds). No committed record was made on a GPU: the GPU timings are in\n"
        "[docs/performance.md](../../docs/performance.md) and `metrics-cuda.json`.\n\n"
    )
    table = markdown(rows)
    out.with_suffix(".md").write_text(header + table)
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
