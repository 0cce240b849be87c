"""``isoflow encode``: the embedding table of a prepared task."""

from __future__ import annotations

import argparse

from . import options

HELP = "embed the items of a prepared task (float32 .npy + index), cached by (model, items)"


def add_parser(sub) -> None:
    from ..models.sbert import ENCODE_BATCH_SIZE

    e = sub.add_parser("encode", help=HELP)
    options.model(e)
    e.add_argument(
        "--pooling",
        choices=("mean", "cls"),
        default="mean",
        help="a plain Hugging Face model's pooling over its tokens (default mean; sentence-transformers folders keep "
        "theirs)",
    )
    e.add_argument("--task", required=True, help="a prepared task, e.g. polarity or glue/sst2")
    options.data(e)
    options.task_dir(e)
    e.add_argument(
        "--batch-size",
        type=options.int_at_least(1),
        default=ENCODE_BATCH_SIZE,
        help=f"sentences per forward pass (default {ENCODE_BATCH_SIZE})",
    )
    options.device(e)
    options.force(e, "encode again even if a matching table exists, replacing what stands at --out")
    e.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..embed import encode, load_embeddings

    out = encode(
        options.model_spec(args),
        args.task,
        data_dir=args.data_dir,
        task_path=args.task_dir,
        out=args.out,
        batch_size=args.batch_size,
        device=args.device,
        mirror=args.mirror,
        force=args.force,
        progress=None if not args.quiet else False,
        raw_dir=args.raw_dir,
        pooling=args.pooling,
    )
    emb, meta = load_embeddings(out)
    print(
        f"{meta['model']} x {meta['task']}: {emb.shape[0]} x {emb.shape[1]} float32 ({meta['seconds']} s on "
        f"{meta['device']}) -> {out}"
    )
    return 0
