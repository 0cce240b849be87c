"""``isoflow finetune-diagnosis``: why λ = −1 once collapsed the held-out space (docs/results/finetune-diagnosis)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import options

HELP = "the I-STAR penalty's gradient against the task loss's, and lambda in {-1, 0, 1} under I-STAR's setup"


def add_parser(sub) -> None:
    from ..finetune.settings import FinetuneSettings

    p = sub.add_parser("finetune-diagnosis", help=HELP)
    p.add_argument("--batches", type=options.int_at_least(1), default=10, help="batches of 32 sentences per gradient")
    p.add_argument(
        "--model",
        default=None,
        help="only the gradients at the pretrained model, for this model (a built-in name, folder, hub id or GGUF "
        "file) on --task; writes <out>/gradients.json. Default: the published diagnosis (MiniLM, polarity)",
    )
    p.add_argument("--model-name", default=None, help="with --model: the name its record gives it")
    options.dtype(p)
    p.add_argument("--task", default=None, help="with --model: a prepared single-label task, e.g. glue/sst2")
    pooling = FinetuneSettings.__dataclass_fields__["pooling"]
    p.add_argument(
        "--pooling",
        choices=pooling.metadata["choices"],
        default=pooling.default,
        help=f"with --model: {pooling.metadata['help']} (as isoflow finetune)",
    )
    options.task_dir(p)
    options.data(p, out="where diagnosis.json and the runs go (default docs/results/finetune-diagnosis)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..finetune.diagnosis import diagnose, model_gradients  # the module itself: DVC's stage deps follow imports
    from ..finetune.runs import GRADIENTS_FILE

    if args.model:
        if not (args.task and args.out):
            raise ValueError("--model needs --task (a prepared task) and --out (the folder for gradients.json)")
        result = model_gradients(
            args.task,
            options.model_spec(args),
            data_dir=args.data_dir,
            task_path=args.task_dir,
            raw_dir=args.raw_dir,
            mirror=args.mirror,
            pooling=args.pooling,
            batches=args.batches,
        )
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / GRADIENTS_FILE).write_text(json.dumps(result, indent=2) + "\n")
    else:
        result = diagnose(
            args.out or "docs/results/finetune-diagnosis",
            data_dir=args.data_dir,
            raw_dir=args.raw_dir or "data/raw",
            mirror=args.mirror,
            batches=args.batches,
        )
    print(json.dumps(result, indent=2))
    return 0
