"""Where one run of `make test` spent its CPU, process by process: a process-accounting file of the run made into a
JSON record (the test-by-test seconds are benchmarks/suite_durations.py's).

Not a test. The kernel's process accounting (Debian's `acct` package: `accton`, `dump-acct`) records every process
that exits, with its parent, CPU and wall seconds; made on a clean clone, e.g.::

    apt-get install -y acct && touch /tmp/pacct && accton /tmp/pacct
    cd ../suite-clone/isoflow && PYTEST_ADDOPTS="--junitxml=/tmp/suite.xml" .ci/run
    accton off && dump-acct /tmp/pacct > /tmp/pacct.txt
    python benchmarks/suite_processes.py /tmp/pacct.txt --label after-XXXX --out /tmp/processes.json

The record splits the CPU seconds into the pytest workers' own (the tests that compute in-process), the processes
each test started (a `snakemake` with its jobs, an `isoflow` command, `dvc`, `make`: one tree each, from the worker's
child down) and the rest (the linters, `make install`). Each tree is listed with its start, wall and CPU seconds, its
processes and how many of them took over a second (a workflow run's jobs). A process is named by its command's first
15 characters as the kernel keeps them; a Python process that loaded pyarrow (pandas' Parquet) exits named
`jemalloc_bg_thd`, after the thread that exits last, so the trees, not the names, say what a process was.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PYARROW_EXIT_NAME = "jemalloc_bg_thd"  # a Python process that loaded pyarrow exits with this name
TICKS = 100  # dump-acct's times are in the kernel's accounting ticks (AHZ): 100 a second


@dataclass(frozen=True)
class Process:
    name: str
    cpu: float  # user + system seconds
    wall: float
    pid: int
    ppid: int
    start: str  # as dump-acct writes it


def read_dump(text: str) -> list[Process]:
    """`dump-acct`'s lines (``name|v3|utime|stime|etime|uid|gid|mem|io|pid|ppid|flags|exit|tty|start``)."""
    out = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) < 15 or f[1] != "v3":
            continue
        cpu = (float(f[2]) + float(f[3])) / TICKS
        out.append(Process(f[0], cpu, float(f[4]) / TICKS, int(f[9]), int(f[10]), f[14]))
    return out


def workers(procs: list[Process], n: int) -> list[Process]:
    """The ``n`` pytest-xdist workers: the ``n`` longest-lived Python processes that share a parent (the controller). A
    worker that loaded pyarrow exits named after its last thread (the module docstring), so that name counts as
    Python."""
    by_parent = defaultdict(list)
    for p in procs:
        if p.name.startswith("python") or p.name == PYARROW_EXIT_NAME:
            by_parent[p.ppid].append(p)
    candidates = [sorted(group, key=lambda p: -p.wall)[:n] for group in by_parent.values() if len(group) >= n]
    if not candidates:
        raise ValueError(f"no {n} Python processes share a parent: is this a run of `make test` with {n} workers?")
    return max(candidates, key=lambda group: min(p.wall for p in group))


def record(procs: list[Process], n_workers: int, label: str) -> dict:
    children = defaultdict(list)
    for p in procs:
        children[p.ppid].append(p)

    def tree(p: Process) -> list[Process]:
        found, stack = [], [p]
        while stack:
            q = stack.pop()
            found.append(q)
            stack.extend(children[q.pid])
        return found

    pool = workers(procs, n_workers)
    trees, started = [], 0.0
    for w in pool:
        for child in children[w.pid]:
            members = tree(child)
            started += sum(m.cpu for m in members)  # summed unrounded: the rest is what no tree holds
            trees.append(
                {
                    "start": child.start,
                    "wall_seconds": round(child.wall, 1),
                    "cpu_seconds": round(sum(m.cpu for m in members), 1),
                    "name": child.name,
                    "processes": len(members),
                    "over_a_second": sum(m.cpu > 1 for m in members),
                }
            )
    trees.sort(key=lambda t: -t["cpu_seconds"])
    total = sum(p.cpu for p in procs)
    own = sum(w.cpu for w in pool)
    return {
        "label": label,
        "cpu_seconds": round(total, 1),
        "workers_own_cpu_seconds": round(own, 1),
        "tests_processes_cpu_seconds": round(started, 1),
        "other_cpu_seconds": round(total - own - started, 1),
        "trees": trees,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dump", type=Path, help="`dump-acct` output of the run's accounting file")
    p.add_argument("--workers", type=int, default=2, help="pytest-xdist workers of the run (make test: 2)")
    p.add_argument("--label", default="run", help="a name for this run")
    p.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    args = p.parse_args(argv)
    rec = record(read_dump(args.dump.read_text()), args.workers, args.label)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(
        f"{rec['cpu_seconds']} CPU s: the workers' own {rec['workers_own_cpu_seconds']}, the processes the tests "
        f"started {rec['tests_processes_cpu_seconds']} ({len(rec['trees'])} trees), other {rec['other_cpu_seconds']}"
        f" -> {args.out}"
    )
    for t in rec["trees"][:10]:
        print(f"  {t['cpu_seconds']:7.1f} CPU s {t['wall_seconds']:7.1f} s {t['processes']:4d} processes  {t['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
