"""``isoflow pretrain``: a plain language model of our own, trained from scratch on a pretraining corpus."""

from __future__ import annotations

import argparse

from .. import settings as declared
from . import options
from .options import say

HELP = (
    "train a tokenizer and a plain masked (BERT-style) or causal (GPT-2-style) LM from scratch on a pretraining corpus"
)


def add_parser(sub) -> None:
    from ..pretrain.settings import PretrainSettings

    p = sub.add_parser("pretrain", help=HELP)
    p.add_argument("--corpus", required=True, help="a folder written by `isoflow pretrain-corpus`")
    p.add_argument(
        "--out", required=True, help="the model folder to write (checkpoints go to <out>.checkpoint while it trains)"
    )
    declared.add_arguments(p, PretrainSettings)
    options.device(p)
    options.force(p)
    options.quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..pretrain import run_pretrain
    from ..pretrain.settings import PretrainSettings

    run_pretrain(
        args.corpus,
        args.out,
        declared.from_namespace(PretrainSettings, args),
        device=args.device,
        force=args.force,
        progress=None if not args.quiet else False,
        log=say(args.quiet),
    )
    return 0
