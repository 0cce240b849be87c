"""``isoflow optimize-aggregate``: optimisation runs in one table (runs differing in more than the seed are refused)."""

from __future__ import annotations

import argparse

from . import options

HELP = (
    "optimisation runs in one table: <out>/trajectories.parquet + runs.csv (runs differing in more than the seed are "
    "refused)"
)


def add_parser(sub) -> None:
    g = sub.add_parser("optimize-aggregate", help=HELP)
    options.run_list(g)
    g.add_argument("--out", default=None, help="output directory (default <results>/optimize/aggregate)")
    g.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..optimize.runs import discover
    from ..records import aggregate

    runs = options.runs_of(args)
    out = args.out or str(Path(args.results) / "optimize" / "aggregate")
    written = aggregate(discover(args.results) if runs is None else runs, out)
    print(
        f"aggregated {'the complete runs under ' + args.results if runs is None else f'{len(runs)} runs'} "
        f"-> {written[0].parent}"
    )
    return 0
