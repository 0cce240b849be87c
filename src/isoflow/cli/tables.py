"""``isoflow tables``: the paper's correlation tables and Tables 1-2 from an aggregate."""

from __future__ import annotations

import argparse

from . import options

HELP = "correlation tables and Tables 1-2 (CSV, Markdown, LaTeX) from an aggregate"


def add_parser(sub) -> None:
    f = sub.add_parser("tables", help=HELP)
    options.aggregate_input(f)
    f.add_argument("--out", default="results/tables", help="output directory (default: results/tables)")
    f.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimization.report import tables
    from ..records import load_aggregate

    written = tables(*load_aggregate(args.aggregate), args.out)
    print(f"wrote {len(written)} tables under {args.out}")
    return 0
