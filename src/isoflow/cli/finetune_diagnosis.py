"""``isoflow finetune-diagnosis``: why λ = −1 once collapsed the held-out space (docs/results/finetune-diagnosis)."""

from __future__ import annotations

import argparse
import json

from . import options

HELP = "the I-STAR penalty's gradient against the task loss's, and lambda in {-1, 0, 1} under I-STAR's setup"


def add_parser(sub) -> None:
    p = sub.add_parser("finetune-diagnosis", help=HELP)
    p.add_argument("--batches", type=options.int_at_least(1), default=10, help="batches of 32 sentences per gradient")
    options.data(p, out="where diagnosis.json and the runs go (default docs/results/finetune-diagnosis)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..finetune.diagnosis import diagnose  # the module itself: DVC's stage deps follow imports

    result = diagnose(
        args.out or "docs/results/finetune-diagnosis",
        data_dir=args.data_dir,
        raw_dir=args.raw_dir or "data/raw",
        mirror=args.mirror,
        batches=args.batches,
    )
    print(json.dumps(result, indent=2))
    return 0
