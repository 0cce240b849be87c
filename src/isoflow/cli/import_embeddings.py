"""``isoflow import-embeddings``: embeddings made elsewhere as a task's embedding table."""

from __future__ import annotations

import argparse

from . import options

HELP = "use embeddings made elsewhere (.npy, .npz, .parquet, .pt; one row per task item) as a task's embedding table"


def add_parser(sub) -> None:
    e = sub.add_parser("import-embeddings", help=HELP)
    e.add_argument("file", help="the (items, dim) matrix; row i is item i of the task's items.parquet")
    e.add_argument("--task", required=True, help="the prepared task the rows belong to")
    e.add_argument(
        "--model", required=True, help="a name for these embeddings (the output directory's; e.g. my-encoder)"
    )
    e.add_argument("--key", default=None, help="entry of an .npz/.pt file or parquet column holding the matrix")
    e.add_argument("--data-dir", default="data", help="root of tasks/ and embeddings/ (default: data)")
    options.task_dir(e)
    e.add_argument("--out", default=None, help="output directory (default <data-dir>/embeddings/<model>/<task>)")
    options.force(e)
    e.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..embed import import_embeddings, load_embeddings

    out = import_embeddings(
        args.file,
        args.task,
        args.model,
        key=args.key,
        data_dir=args.data_dir,
        task_path=args.task_dir,
        out=args.out,
        force=args.force,
    )
    emb, meta = load_embeddings(out)
    print(f"{meta['model']} x {meta['task']}: {emb.shape[0]} x {emb.shape[1]} float32, imported -> {out}")
    return 0
