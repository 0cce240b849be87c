"""``isoflow optimize-report``: the optimize section's tables (the paper's correlations, Tables 1-2) and figures."""

from __future__ import annotations

import argparse

from . import options

HELP = (
    "the optimisation experiment's correlation tables, Tables 1-2 (CSV, Markdown, LaTeX) and figures, from an aggregate"
)


def add_parser(sub) -> None:
    r = sub.add_parser("optimize-report", help=HELP)
    options.aggregate_input(r, "optimize")
    options.report_outputs(r, "optimize")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimize.figures import figures
    from ..optimize.report import tables
    from ..records import load_aggregate

    traj, info = load_aggregate(args.aggregate)
    written = tables(traj, info, args.tables) + figures(traj, args.figures)
    print(f"wrote {len(written)} files: tables under {args.tables}, figures under {args.figures}")
    return 0
