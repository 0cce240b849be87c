"""``isoflow finetune``: a sentence encoder fine-tuned with the I-STAR penalty, measured on held-out data."""

from __future__ import annotations

import argparse
import json

from . import options

HELP = "fine-tune a sentence encoder (+ linear head) with the I-STAR penalty, measured on held-out data"


def add_parser(sub) -> None:
    f = sub.add_parser("finetune", help=HELP)
    f.add_argument("--task", required=True, help="a prepared single-label task, e.g. polarity, glue/sst2, glue/mrpc")
    f.add_argument("--model", required=True, help="minilm or mpnet (or distilroberta where the hub is reachable)")
    options.istar(f)
    f.add_argument("--istar-points", choices=("pooled", "tokens"), default="pooled",
                   help="the penalty's points: the batch's sentence embeddings (default) or token states of every layer but the first")
    f.add_argument("--seed", type=options.int_at_least(0), default=0)
    f.add_argument("--epochs", type=options.int_at_least(1), default=1)
    f.add_argument("--batch-size", type=options.int_at_least(2), default=32)
    f.add_argument("--lr", type=options.positive_float, default=2e-5, help="AdamW learning rate (default 2e-5)")
    f.add_argument("--max-train", type=options.int_at_least(0), default=0, help="train on a seeded stratified subset of this many examples (0: all)")
    f.add_argument("--heldout-fraction", type=options.unit_interval, default=0.1,
                   help="held out from the training data when no validation split is at hand (default 0.1)")
    f.add_argument("--max-heldout", type=options.int_at_least(0), default=0, help="evaluate on at most this many held-out examples (0: all)")
    options.task_dir(f)
    options.results(f)
    options.device(f)
    options.data(f)
    f.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..finetune import run_finetune

    parquet, record = run_finetune(
        args.task, args.model, args.seed, data_dir=args.data_dir, task_path=args.task_dir, results=args.results, out=args.out,
        device=args.device, mirror=args.mirror, raw_dir=args.raw_dir, progress=None if not args.quiet else False,
        istar_lambda=args.istar, zeta=args.zeta, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, max_train=args.max_train,
        heldout_fraction=args.heldout_fraction, max_heldout=args.max_heldout, istar_points=args.istar_points)
    info = json.loads(record.read_text())
    status = f"diverged at epoch {info['diverged_at_epoch']}" if info.get("diverged") else f"{args.epochs} epoch(s)"
    print(f"{info['settings']['task']} x {args.model} lambda {args.istar:g} seed {args.seed}: {status}, {info['n_train']} training / "
          f"{info['n_heldout']} held-out examples ({info['held_out']['source']}), "
          f"{info['train_sentences_per_second'] or 0:.0f} sentences/s training -> {parquet}")
    return 0
