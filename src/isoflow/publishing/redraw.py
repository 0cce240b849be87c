"""Redraw the tables and figures of the publications (docs/results/<publication>) from the runs they hold, through the
same `isoflow` report commands the workflow's report rules run: after a change to the report code, the committed
figures are remade from the committed runs without rerunning hours of training.

    python scripts/redraw_published.py [PUBLICATION ...]      # default: every one there is; `make redraw`

Which commands redraw a publication is its section's registration (isoflow.sections: ``redraw``). Each
publication's PUBLISHED.json then records the redraw (commands, code commit) beside how the runs were made; its
paths are relative to the repository."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..atomic import MARKER
from ..layout import RUNS
from ..provenance import PUBLISHED_RESULTS, code_version
from ..sections import PUBLICATIONS, SECTIONS
from . import ROOT

PUBLISHED = Path(PUBLISHED_RESULTS)


def _isoflow(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "isoflow.cli", *args], cwd=ROOT, check=True)


def redraw(name: str) -> list[str]:
    """Remake publication ``name``'s tables and figures; returns the commands run (long ones shortened)."""
    folder = PUBLISHED / name
    with tempfile.TemporaryDirectory(prefix="isoflow-redraw-") as tmp:
        commands = SECTIONS[PUBLICATIONS[name].section].redraw(folder, Path(tmp))
        for command in commands:
            _isoflow(*command)
    return [
        " ".join(["isoflow", *(c if not c.startswith(tmp) else "<aggregate>" for c in cmd[:8])])
        + (" ..." if len(cmd) > 8 else "")
        for cmd in commands
    ]


def record(name: str, commands: list[str], checkout: dict) -> None:
    """PUBLISHED.json: how the runs were made (kept from the publication) and how the tables and figures were last
    drawn."""
    path = ROOT / PUBLISHED / name / "PUBLISHED.json"
    info = (
        json.loads(path.read_text()) if path.is_file() else {"publication": name, "section": PUBLICATIONS[name].section}
    )
    info["redrawn"] = {"by": "make redraw", "commands": commands, "workflow_checkout": checkout}
    path.write_text(json.dumps(info, indent=2) + "\n")
    marker = path.with_name(MARKER)  # a publication: `make reproduce-<name>` may replace it
    if not marker.is_file():
        marker.write_text(json.dumps({"written_by": "isoflow", "kind": f"published {name} results"}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    published = sorted(n for n in PUBLICATIONS if (ROOT / PUBLISHED / n / RUNS).is_dir())
    parser.add_argument(
        "publications", nargs="*", default=published, help=f"default: every one there is ({', '.join(published)})"
    )
    args = parser.parse_args(argv)
    missing = [n for n in args.publications if n not in published]
    if missing:  # nothing to redraw from: say so before redrawing anything
        parser.error(
            f"{', '.join(missing)}: no runs published under {PUBLISHED} (make reproduce-<name> publishes them); "
            f"published: {', '.join(published)}"
        )
    checkout = code_version(ROOT)  # before the first figure is rewritten (which makes the tree dirty)
    for name in args.publications:
        record(name, redraw(name), checkout)
        print(f"{PUBLISHED / name}: tables and figures redrawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
