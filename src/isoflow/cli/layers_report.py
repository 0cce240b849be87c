"""``isoflow layers-report``: tables and figures over layer analyses."""

from __future__ import annotations

import argparse

from . import options

HELP = "tables and figures over layer analyses (docs/layers.md)"


def add_parser(sub) -> None:
    z = sub.add_parser("layers-report", help=HELP)
    z.add_argument("runs", nargs="+", help="output directories of `isoflow layers`")
    options.report_outputs(z, "layers")
    z.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..layers import figures, report

    layers, views, metas, clusters, extra = report.load(args.runs)
    written = report.tables(layers, metas, args.tables, clusters, extra)
    written += figures.figures(layers, views, args.figures, extra, metas)
    print(f"wrote {len(written)} files: layer tables under {args.tables}, figures under {args.figures}")
    return 0
