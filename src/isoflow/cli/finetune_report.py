"""``isoflow finetune-report``: the fine-tuning sweep's table and figures."""

from __future__ import annotations

import argparse

from . import options

HELP = "the fine-tuning sweep's table (finetune.csv/md/tex) and figures"


def add_parser(sub) -> None:
    fr = sub.add_parser("finetune-report", help=HELP)
    fr.add_argument("runs", nargs="+", help="run records (<stem>.json) of `isoflow finetune`")
    options.report_outputs(fr, "finetune")
    fr.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..finetune.report import report

    written = report(args.runs, args.tables, args.figures)
    print(f"wrote {len(written)} files: finetune tables under {args.tables}, figures under {args.figures}")
    return 0
