"""``isoflow istar-report``: the I-STAR sweep's table and figures (optimisation experiment)."""

from __future__ import annotations

import argparse

from . import options

HELP = "the I-STAR sweep's table (istar.csv/md/tex) and figures, from an aggregate of its runs"


def add_parser(sub) -> None:
    r = sub.add_parser("istar-report", help=HELP)
    options.aggregate_input(r, "istar")
    options.report_outputs(r, "istar")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimize import istar_report
    from ..records import load_aggregate

    traj, info = load_aggregate(args.aggregate)
    written = istar_report.tables(traj, info, args.tables) + istar_report.figures(traj, info, args.figures)
    print(f"wrote {len(written)} files: the I-STAR table under {args.tables}, its figures under {args.figures}")
    return 0
