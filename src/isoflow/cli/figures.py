"""``isoflow figures``: the paper's figures from an aggregate."""

from __future__ import annotations

import argparse

from . import options

HELP = "silhouette and IsoScore across training and against each other (PNG, PDF) from an aggregate"


def add_parser(sub) -> None:
    f = sub.add_parser("figures", help=HELP)
    options.aggregate_input(f)
    f.add_argument("--out", default="results/figures", help="output directory (default: results/figures)")
    f.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimization.report import figures
    from ..records import load_aggregate

    written = figures(load_aggregate(args.aggregate)[0], args.out)
    print(f"wrote {len(written)} figures under {args.out}")
    return 0
