"""Redraw the tables and figures of the publications (docs/results/<publication>) from the runs they hold, through the
same `isoflow` report commands the workflow's report rules run: after a change to the report code, the committed
figures are remade from the committed runs without rerunning hours of training.

    python scripts/redraw_published.py [PUBLICATION ...]      # default: every one there is; `make redraw`

Which commands redraw a publication is its section's registration (isoflow.sections: ``redraw``), or for one made
by a single measuring command rather than a section's runs, :data:`REPORT_ONLY`. Each publication's PUBLISHED.json
then records the redraw (commands, code commit) beside how the runs were made; its paths are relative to the
repository."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..atomic import MARKER
from ..layout import RUNS
from ..provenance import PUBLISHED_RESULTS, code_version
from ..sections import PUBLICATIONS, SECTIONS
from . import ROOT

PUBLISHED = Path(PUBLISHED_RESULTS)


class Measured(NamedTuple):
    """A publication one measuring command made (no section, no runs/)."""

    kept: str  # the file it keeps its measurement in
    made_by: str  # its make target
    redraw: Callable[[Path], list[list[str]]]  # the commands that draw its tables and figures again from that file


REPORT_ONLY = {
    "istar-points": Measured(
        "points_diagnosis.json",
        "make reproduce-istar-points",
        lambda folder: [["points-diagnosis", "--report-only", "--out", str(folder)]],
    ),
}


def _redrawable(root: Path) -> list[str]:
    """The publications with something to redraw from: a section's published runs, or a measurement file."""
    with_runs = [n for n in PUBLICATIONS if (root / PUBLISHED / n / RUNS).is_dir()]
    measured = [n for n, m in REPORT_ONLY.items() if (root / PUBLISHED / n / m.kept).is_file()]
    return sorted(with_runs + measured)


def run_isoflow(*args: str) -> None:
    """Run ``isoflow ARGS`` in the repository (the report commands a redraw runs)."""
    subprocess.run([sys.executable, "-m", "isoflow.cli", *args], cwd=ROOT, check=True)


def redraw(name: str) -> list[str]:
    """Remake publication ``name``'s tables and figures; returns the commands run (long ones shortened)."""
    folder = PUBLISHED / name
    with tempfile.TemporaryDirectory(prefix="isoflow-redraw-") as tmp:
        if name in REPORT_ONLY:
            commands = REPORT_ONLY[name].redraw(folder)
        else:
            commands = SECTIONS[PUBLICATIONS[name].section].redraw(folder, Path(tmp))
        for command in commands:
            run_isoflow(*command)
    return [
        " ".join(["isoflow", *(c if not c.startswith(tmp) else "<aggregate>" for c in cmd[:8])])
        + (" ..." if len(cmd) > 8 else "")
        for cmd in commands
    ]


def record(name: str, commands: list[str], checkout: dict) -> None:
    """PUBLISHED.json: how the runs were made (kept from the publication) and how the tables and figures were last
    drawn."""
    path = ROOT / PUBLISHED / name / "PUBLISHED.json"
    if path.is_file():
        info = json.loads(path.read_text())
    elif name in REPORT_ONLY:  # how it was made is in its measurement file (commit, threads); here only the target
        info = {"publication": name, "made_by": REPORT_ONLY[name].made_by}
    else:
        info = {"publication": name, "section": PUBLICATIONS[name].section}
    info["redrawn"] = {"by": "make redraw", "commands": commands, "workflow_checkout": checkout}
    path.write_text(json.dumps(info, indent=2) + "\n")
    # Not a section's publication: `make reproduce-<name>` writes into it, it does not replace it (no marker).
    if name in REPORT_ONLY:
        return
    marker = path.with_name(MARKER)  # a publication: `make reproduce-<name>` may replace it
    if not marker.is_file():
        marker.write_text(json.dumps({"written_by": "isoflow", "kind": f"published {name} results"}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    published = _redrawable(ROOT)
    parser.add_argument(
        "publications", nargs="*", default=published, help=f"default: every one there is ({', '.join(published)})"
    )
    args = parser.parse_args(argv)
    missing = [n for n in args.publications if n not in published]
    if missing:  # nothing to redraw from: say so before redrawing anything
        parser.error(
            f"{', '.join(missing)}: nothing published under {PUBLISHED} to redraw from "
            f"(make reproduce-<name> publishes it); published: {', '.join(published)}"
        )
    checkout = code_version(ROOT)  # before the first figure is rewritten (which makes the tree dirty)
    for name in args.publications:
        record(name, redraw(name), checkout)
        print(f"{PUBLISHED / name}: tables and figures redrawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
