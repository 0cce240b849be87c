"""What `make test` costs, test by test: a JUnit file of one run of the suite made into a JSON record.

Not a test. Made on a clean clone (the suite's durations depend on what the checkout has built before), e.g.::

    git clone -q . ../suite-clone/isoflow && ln -s "$PWD/../shared" ../suite-clone/shared
    cd ../suite-clone/isoflow && PYTEST_ADDOPTS="--junitxml=/tmp/suite.xml" .ci/run   # prints wall and CPU seconds
    python benchmarks/suite_durations.py /tmp/suite.xml --wall 2952 --cpu 3748 --label baseline \\
        --out benchmarks/results/suite/baseline.json

(`.ci/run` runs `make install` in the clone: `make install` in your own checkout afterwards.) The record holds the
wall and CPU seconds as given, the seconds of every test id (setup and teardown included: a session fixture's cost
falls on the first test that asks for it) and their sum per file. ``--compare OTHER.json`` says which test ids are in
one record and not the other, and the seconds per file side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_id(classname: str, name: str) -> str:
    """pytest's node id from a JUnit test case: ``tests.test_x`` + ``test_y[p]`` -> ``tests/test_x.py::test_y[p]``;
    a doctest (``src.isoflow.m`` + ``isoflow.m.f``) -> ``src/isoflow/m.py::isoflow.m.f``; without the xdist group
    ``@<group>`` a grouped test's id ends with under `--dist loadgroup`."""
    name = re.sub(r"@[\w-]+$", "", name)  # an xdist group (`--dist loadgroup` appends it to the node id)
    module, _, cls = classname.partition("::")
    parts = module.split(".")
    # a test class shows as the last dotted part when its module's name is a file: tests.test_x.TestY
    if len(parts) > 2 and parts[-1][:1].isupper():
        parts, cls = parts[:-1], parts[-1]
    path = "/".join(parts) + ".py"
    return "::".join(p for p in (path, cls, name) if p)


def durations(junit: Path) -> dict[str, float]:
    """Seconds per test id."""
    cases = ET.parse(junit).getroot().iter("testcase")
    return {test_id(c.get("classname", ""), c.get("name", "")): float(c.get("time", 0)) for c in cases}


def record(junit: Path, wall: float | None, cpu: float | None, label: str) -> dict:
    seconds = durations(junit)
    per_file: dict[str, float] = defaultdict(float)
    for tid, s in seconds.items():
        per_file[tid.split("::")[0]] += s
    ordered = sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "label": label,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "tests": len(seconds),
        "sum_of_test_seconds": round(sum(seconds.values()), 1),
        "per_file": {f: round(s, 1) for f, s in sorted(per_file.items(), key=lambda kv: -kv[1])},
        "per_test": {tid: round(s, 2) for tid, s in ordered},
    }


def compare(a: dict, b: dict) -> str:
    """Test ids in one record only, and the seconds per file of both."""
    ids_a, ids_b = set(a["per_test"]), set(b["per_test"])
    lines = [f"{a['label']}: {a['tests']} tests; {b['label']}: {b['tests']} tests"]
    lines += [f"  only in {a['label']}: {t}" for t in sorted(ids_a - ids_b)]
    lines += [f"  only in {b['label']}: {t}" for t in sorted(ids_b - ids_a)]
    files = sorted(set(a["per_file"]) | set(b["per_file"]), key=lambda f: -a["per_file"].get(f, 0))
    lines += [f"  {a['per_file'].get(f, 0):8.1f} {b['per_file'].get(f, 0):8.1f}  {f}" for f in files]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("junit", type=Path, help="pytest's --junitxml file of one run of the suite")
    p.add_argument("--wall", type=float, help="the run's wall seconds (as .ci/run prints them)")
    p.add_argument("--cpu", type=float, help="the run's CPU seconds, user + system of every process")
    p.add_argument("--label", default="run", help="a name for this run in comparisons")
    p.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    p.add_argument("--compare", type=Path, help="another record: the test ids in one only, seconds per file")
    args = p.parse_args(argv)
    rec = record(args.junit, args.wall, args.cpu, args.label)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(f"{rec['tests']} tests, {rec['sum_of_test_seconds']} s summed -> {args.out}")
    if args.compare:
        print(compare(json.loads(args.compare.read_text()), rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
