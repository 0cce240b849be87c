"""``isoflow finetune-seed-floor``: CKA between the seeds of one fine-tuning weight, per layer (the floor that CKA to
the pretrained model is read against)."""

from __future__ import annotations

import argparse

HELP = "CKA between the fine-tuned models of one weight's seeds, per layer, from their runs' states (--states-points)"


def add_parser(sub) -> None:
    p = sub.add_parser("finetune-seed-floor", help=HELP)
    p.add_argument("states", nargs="+", help="the states files of one weight's runs (two seeds or more)")
    p.add_argument("--out", required=True, help="where the per-layer CKA goes (JSON; the report's finetune_seed_floor)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..atomic import write_json
    from ..finetune.seed_floor import seed_floor

    floor = seed_floor(args.states)
    write_json(args.out, floor)
    lowest = min(min(row["cka_between_seeds"]) for row in floor["layers"])
    print(
        f"{floor['task']} x {floor['model']} seeds {floor['seeds']}: {len(floor['layers'])} layers, "
        f"{floor['tokens']} tokens, lowest CKA between seeds {lowest:.4f} -> {args.out}"
    )
    return 0
