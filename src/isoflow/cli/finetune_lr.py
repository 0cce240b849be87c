"""``isoflow finetune-lr``: the learning rate chosen on the validation split from candidate runs."""

from __future__ import annotations

import argparse

HELP = "choose the learning rate from plain candidate runs by their best validation metric (never the held-out set)"


def add_parser(sub) -> None:
    p = sub.add_parser("finetune-lr", help=HELP)
    p.add_argument("runs", nargs="+", help="run records (<stem>.json) of `isoflow finetune`, one per candidate rate")
    p.add_argument("--out", required=True, help="the choice (JSON) that `isoflow finetune --lr-from` reads")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..atomic import write_json
    from ..finetune.learning_rate import choose

    choice = choose(args.runs)
    write_json(args.out, choice)
    scores = ", ".join(f"{lr}: {c['validation_metric']:.4f}" for lr, c in choice["candidates"].items())
    print(f"learning rate {choice['lr']:g} (best validation metric; {scores}) -> {args.out}")
    return 0
