"""``isoflow istar-report``: the I-STAR sweep's table and figures (optimisation experiment)."""

from __future__ import annotations

import argparse

from . import options

HELP = "the I-STAR sweep's table (istar.csv/md/tex) and figures, from an aggregate of its runs"


def add_parser(sub) -> None:
    r = sub.add_parser("istar-report", help=HELP)
    options.aggregate_input(r, "istar")
    r.add_argument(
        "--baseline",
        default=None,
        help="another sweep's aggregate (e.g. the paper's linear head) to compare this one with: the table and figure "
        "istar_heads",
    )
    options.report_outputs(r, "istar")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimize import istar_report
    from ..records import load_aggregate

    traj, info = load_aggregate(args.aggregate)
    written = istar_report.tables(traj, info, args.tables) + istar_report.figures(traj, info, args.figures)
    if args.baseline:
        written += istar_report.heads(traj, info, *load_aggregate(args.baseline), args.tables, args.figures)
    print(f"wrote {len(written)} files: the I-STAR table under {args.tables}, its figures under {args.figures}")
    return 0
