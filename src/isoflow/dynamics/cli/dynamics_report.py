"""``isoflow dynamics-report``: the dynamics section's table and figure from its checkpoints' measurements."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    r = sub.add_parser(
        "dynamics-report", help="every checkpoint's layers in one table, and each measure against the training step"
    )
    r.add_argument("runs", nargs="+", help="measurements: <results>/dynamics/runs/<series>/<corpus>/<revision>")
    r.add_argument("--tables", default="results/dynamics/tables", help="where the table goes")
    r.add_argument("--figures", default="results/dynamics/figures", help="where the figure goes")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import dynamics_report

    for path in dynamics_report(args.runs, args.tables, args.figures):
        print(path)
    return 0
