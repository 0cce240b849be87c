"""Redraw the tables and figures of the published sections (docs/results/<section>) from the runs they hold, through
the same `isoflow` commands the workflow's report rules run: after a change to the report code, the committed
figures are remade from the committed runs without rerunning hours of training.

    python scripts/redraw_published.py [SECTION ...]      # default: every section; `make redraw`

paper, supersense-ablation: `isoflow aggregate` of the runs in runs.csv, then `isoflow tables` and `isoflow figures`;
istar: `isoflow aggregate` + `isoflow istar-report`; layers: `isoflow layers-report` over layers/<model>/<corpus>;
finetune, finetune-longer: `isoflow finetune-report` over finetune/**/seed*.json; stability: `isoflow istar-stability` with the settings in
stability/meta.json (seeded: the same estimates). Each section's PUBLISHED.json then records the
redraw (command, code commit) beside how the runs were made; its paths are relative to the repository.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from isoflow.atomic import MARKER
from isoflow.provenance import code_version

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = Path("docs/results")
# How each section's runs were made (the Makefile's targets; each run's own record names its code commit).
MADE_BY = {"paper": "make reproduce-paper", "istar": "make reproduce-istar", "layers": "make reproduce-layers",
           "finetune": "make reproduce-finetune", "supersense-ablation": "make reproduce-ablation", "stability": "make reproduce-stability",
           "finetune-longer": "make reproduce-finetune-longer"}


def _isoflow(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "isoflow.cli", *args], cwd=ROOT, check=True)


def _records(section: Path) -> list[str]:
    with open(ROOT / section / "runs.csv", newline="", encoding="utf-8") as fh:
        return [row["record"] for row in csv.DictReader(fh)]


def redraw(name: str) -> list[str]:
    """The commands that remake section ``name``'s tables and figures; runs them and returns them."""
    section = PUBLISHED / name
    tables, figures = str(section / "tables"), str(section / "figures")
    commands = []
    with tempfile.TemporaryDirectory(prefix="isoflow-redraw-") as tmp:
        if name in ("paper", "supersense-ablation", "istar"):
            commands.append(["aggregate", "--out", tmp, *_records(section)])
            if name == "istar":
                commands.append(["istar-report", "--aggregate", tmp, "--tables", tables, "--figures", figures])
            else:
                commands += [["tables", "--aggregate", tmp, "--out", tables], ["figures", "--aggregate", tmp, "--out", figures]]
        elif name == "layers":
            runs = sorted(str(p.parent.relative_to(ROOT)) for p in (ROOT / section / "layers").glob("*/*/meta.json"))
            commands.append(["layers-report", *runs, "--tables", tables, "--figures", figures])
        elif name == "stability":  # recomputed from its recorded settings (seeded; a few minutes)
            settings = json.loads((ROOT / section / "stability" / "meta.json").read_text())["settings"]
            opts = [x for k, v in settings.items() for x in (f"--{k.replace('_', '-')}", ",".join(map(str, v)) if isinstance(v, list) else str(v))]
            commands.append(["istar-stability", *opts, "--runs", str(section / "stability"), "--tables", tables, "--figures", figures, "--quiet"])
        elif name in ("finetune", "finetune-longer"):
            runs = sorted(str(p.relative_to(ROOT)) for p in (ROOT / section / "finetune").rglob("seed*.json"))
            commands.append(["finetune-report", *runs, "--tables", tables, "--figures", figures])
        else:
            raise ValueError(f"unknown section {name!r}; known: {', '.join(MADE_BY)}")
        for command in commands:
            _isoflow(*command)
    return [" ".join(["isoflow", *(c if not c.startswith(tmp) else "<aggregate>" for c in cmd[:8])]) + (" ..." if len(cmd) > 8 else "")
            for cmd in commands]


def record(name: str, commands: list[str], checkout: dict) -> None:
    """PUBLISHED.json: how the runs were made (kept from an earlier publication) and how the tables and figures were
    last drawn; every path relative to the repository."""
    path = ROOT / PUBLISHED / name / "PUBLISHED.json"
    info = json.loads(path.read_text()) if path.is_file() else {"section": name, "made_by": MADE_BY[name]}
    results = info.get("results_dir")
    if results and Path(results).is_absolute():  # older publications recorded the machine's absolute path
        info["results_dir"] = "results/" + Path(results).name
    if info.get("made_by"):
        info["made_by"] = re.sub(r" \(checkout /\S+ at (\w+)\)", r" (at \1)", info["made_by"])
    info["redrawn"] = {"by": "make redraw", "commands": commands, "workflow_checkout": checkout}
    path.write_text(json.dumps(info, indent=2) + "\n")
    marker = path.with_name(MARKER)  # a publication: `make reproduce-<section>` may replace it
    if not marker.is_file():
        marker.write_text(json.dumps({"written_by": "isoflow", "kind": f"published {name} results"}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    published = sorted(n for n in MADE_BY if (ROOT / PUBLISHED / n).is_dir())
    parser.add_argument("sections", nargs="*", default=published, help=f"default: every published one ({', '.join(published)})")
    args = parser.parse_args(argv)
    checkout = code_version(ROOT)  # before the first figure is rewritten (which makes the tree dirty)
    for name in args.sections:
        record(name, redraw(name), checkout)
        print(f"{PUBLISHED / name}: tables and figures redrawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
