"""``isoflow finetune``: a sentence encoder fine-tuned with the I-STAR penalty, measured on held-out data."""

from __future__ import annotations

import argparse
import json

from . import options

# isoflow.finetune.model.POINTS (a test keeps them equal): importing it here would load torch for every command.
POINTS = ("tokens-all-layers", "tokens-last-layer", "pooled")

HELP = "fine-tune a sentence encoder (+ classification head) with I-STAR or CosReg, measured on held-out data"


def add_parser(sub) -> None:
    f = sub.add_parser("finetune", help=HELP)
    f.add_argument("--task", required=True, help="a prepared single-label task, e.g. polarity, glue/sst2, glue/mrpc")
    options.model(f, static=False, extra=": mean pooling is added")
    options.istar(f)
    f.add_argument("--cosreg", type=options.finite_float, default=None, metavar="WEIGHT",
                   help="CosReg instead of I-STAR: add WEIGHT * mean pairwise cosine of the points to the loss (the poster's baseline)")
    f.add_argument("--points", choices=POINTS, default=POINTS[0],
                   help="the regulariser's points: token states of every layer but the embedding output (default, I-STAR's), "
                        "of the last layer, or the pooled outputs; padding is left out")
    f.add_argument("--shrinkage-points", type=options.int_at_least(2), default=100_000,
                   help="training points IsoScore*'s Sigma_S is estimated from, before training and after every epoch (default 100000)")
    f.add_argument("--seed", type=options.int_at_least(0), default=0, help="seeds the head's initialisation and the batch order (default 0)")
    f.add_argument("--epochs", type=options.int_at_least(1), default=3, help="default 3 (BERT's GLUE recipe)")
    f.add_argument("--batch-size", type=options.int_at_least(2), default=32)
    f.add_argument("--lr", type=options.positive_float, default=1e-5, help="AdamW learning rate (default 1e-5, I-STAR's)")
    f.add_argument("--max-train", type=options.int_at_least(0), default=0,
                   help="train on a fixed stratified subset of this many examples (0: all)")
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

    if args.cosreg is not None and args.istar:
        raise ValueError("--istar and --cosreg name two regularisers; a run has one (the other's weight is 0)")
    reg = "istar" if args.cosreg is None else "cosreg"
    parquet, record = run_finetune(
        args.task, args.model, args.seed, data_dir=args.data_dir, task_path=args.task_dir, results=args.results, out=args.out,
        device=args.device, mirror=args.mirror, raw_dir=args.raw_dir, progress=None if not args.quiet else False,
        reg=reg, istar_lambda=args.istar, cosreg_weight=args.cosreg or 0.0, zeta=args.zeta, points=args.points,
        shrinkage_points=args.shrinkage_points, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, max_train=args.max_train,
        heldout_fraction=args.heldout_fraction, max_heldout=args.max_heldout, model_name=args.model_name)
    info = json.loads(record.read_text())
    status = f"diverged at epoch {info['diverged_at_epoch']}" if info.get("diverged") else f"{args.epochs} epoch(s)"
    weight = f"lambda {args.istar:g}" if reg == "istar" else f"CosReg {args.cosreg:g}"
    print(f"{info['settings']['task']} x {info['settings']['model']} {weight} seed {args.seed}: {status}, {info['n_train']} training / "
          f"{info['n_heldout']} held-out examples ({info['held_out']['source']}), "
          f"{info['train_sentences_per_second'] or 0:.0f} sentences/s training -> {parquet}")
    return 0
