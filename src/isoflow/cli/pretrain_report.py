"""``isoflow pretrain-report``: the pretrained models' held-out scores and training curves."""

from __future__ import annotations

import argparse

HELP = "tables and figures of pretrained models: held-out loss, perplexity and accuracy beside the unigram baseline; curves"


def add_parser(sub) -> None:
    r = sub.add_parser("pretrain-report", help=HELP)
    r.add_argument("models", nargs="+", help="model folders written by `isoflow pretrain`")
    r.add_argument("--tables", default="results/pretrain/tables", help="where pretrain.{csv,md,tex} go (default: results/pretrain/tables)")
    r.add_argument("--figures", default="results/pretrain/figures",
                   help="where pretrain_curves.{png,pdf} go (default: results/pretrain/figures)")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..pretrain.report import pretrain_report

    for path in pretrain_report(args.models, args.tables, args.figures):
        print(path)
    return 0
