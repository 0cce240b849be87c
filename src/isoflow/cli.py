"""The ``isoflow`` command line: thin wrappers over the library (the science lives in the modules)."""

from __future__ import annotations

import argparse
import json
import sys


def _geometry(args: argparse.Namespace) -> int:
    import torch

    from .arrays import load_array
    from .devices import resolve_device
    from .metrics import METRIC_NAMES, geometry

    device = resolve_device(args.device)
    X = torch.from_numpy(load_array(args.embeddings, args.key)).to(device)
    labels = None if args.labels is None else load_array(args.labels, args.labels_key, preferred=("label", "labels", "y"))
    types = None if args.types is None else load_array(args.types, args.types_key, preferred=("type", "types", "word"))
    metrics = None if args.metrics is None else [m.strip() for m in args.metrics.split(",") if m.strip()]
    if metrics is not None and not metrics:
        raise ValueError(f"--metrics is empty; choose from {', '.join(METRIC_NAMES)}")
    result = geometry(X, labels, types, metrics=metrics, sample=args.sample or None, seed=args.seed, k_lid=args.k_lid)
    if args.format == "json":
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        width = max(len(k) for k in result)
        for k, v in result.items():
            shown = f"{int(v)}" if k in ("n_points", "dim", "cluster_k") else f"{v:.6f}"
            print(f"{k:<{width}}  {shown}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="isoflow", description="Geometry of embedding spaces under classification training.")
    parser.add_argument("--version", action="version", version=f"isoflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("geometry", help="isotropy, silhouette and intrinsic-dimension metrics of an embedding matrix")
    g.add_argument("embeddings", help="(n_points, dim) matrix: .npy, .npz, .parquet or .pt")
    g.add_argument("--key", help="entry of an .npz/.pt dict or parquet column holding the matrix")
    g.add_argument("--labels", help="class labels, one per row (.npy/.npz/.parquet/.pt/.txt/.csv), or a 2-d multi-label 0/1 matrix")
    g.add_argument("--labels-key", help="entry/column of the labels file")
    g.add_argument("--types", help="type id per row (e.g. the word of each contextual embedding), for S_inter/S_intra")
    g.add_argument("--types-key", help="entry/column of the types file")
    g.add_argument("--metrics", help="comma-separated subset of metrics (default: all the inputs allow)")
    g.add_argument("--sample", type=int, default=20_000, help="compute on a seeded sample of this many rows when larger (0: all rows; default 20000)")
    g.add_argument("--seed", type=int, default=0, help="seed of the row sample and of k-means")
    g.add_argument("--k-lid", type=int, default=20, help="neighbours for LID (default 20)")
    g.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    g.add_argument("--format", choices=("table", "json"), default="table")
    g.set_defaults(func=_geometry)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:  # bad input: one clear line, no traceback
        print(f"isoflow {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
