"""``isoflow pretrain-report``: the pretrained models' held-out scores and training curves."""

from __future__ import annotations

import argparse

from . import options

HELP = (
    "tables and figures of pretrained models: held-out loss, perplexity and accuracy beside the unigram baseline; "
    "curves"
)


def add_parser(sub) -> None:
    r = sub.add_parser("pretrain-report", help=HELP)
    r.add_argument("models", nargs="+", help="model folders written by `isoflow pretrain` (or their records: --runs)")
    options.report_outputs(r, "pretrain")
    r.add_argument(
        "--runs",
        default=None,
        help="also copy the models' records (no weights) to this folder, e.g. results/pretrain/runs",
    )
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..pretrain.report import pretrain_report

    for path in pretrain_report(args.models, args.tables, args.figures, args.runs):
        print(path)
    return 0
