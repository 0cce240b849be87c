"""``isoflow dynamics-report``: the dynamics section's tables and figures from its checkpoints' measurements and
comparisons."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    r = sub.add_parser(
        "dynamics-report",
        help="every checkpoint's layers in one table, the anchors' findings read on it, each measure against the step",
    )
    r.add_argument(
        "runs",
        nargs="+",
        help="measurements (<results>/dynamics/runs/<series>/<corpus>/<revision>) and comparisons of two checkpoints "
        "(<results>/dynamics/runs/cka/<series>/<corpus>/<revision>/<later>)",
    )
    r.add_argument("--tables", default="results/dynamics/tables", help="where the tables go")
    r.add_argument("--figures", default="results/dynamics/figures", help="where the figures go")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import dynamics_report

    for path in dynamics_report(args.runs, args.tables, args.figures):
        print(path)
    return 0
