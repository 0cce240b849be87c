"""``isoflow analyze``: aggregate, tables and figures of the optimisation runs in one go."""

from __future__ import annotations

import argparse

from . import options

HELP = "aggregate, tables and figures in one go (= aggregate + tables + figures)"


def add_parser(sub) -> None:
    a = sub.add_parser("analyze", help=HELP)
    options.run_list(a)
    a.add_argument("--out", default=None, help="where aggregate/, tables/ and figures/ go (default: the results root)")
    a.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimization.report import analyze

    written = analyze(args.results, args.out, runs=options.runs_of(args))
    print(f"wrote {len(written)} files under {args.out or args.results}: " + ", ".join(sorted({p.parent.name for p in written})))
    return 0
