"""``isoflow geometry``: the metrics of an embedding matrix from a file."""

from __future__ import annotations

import argparse
import json
import sys

from . import options

HELP = "isotropy, silhouette and intrinsic-dimension metrics of an embedding matrix"


def add_parser(sub) -> None:
    g = sub.add_parser("geometry", help=HELP)
    g.add_argument("embeddings", help="(n_points, dim) matrix: .npy, .npz, .parquet or .pt")
    g.add_argument("--key", help="entry of an .npz/.pt dict or parquet column holding the matrix")
    g.add_argument(
        "--labels",
        help="class labels, one per row: .txt (a label a line), .csv/.tsv (with a header), "
        ".npy/.npz/.parquet/.pt; or a 2-d multi-label 0/1 matrix",
    )
    g.add_argument("--labels-key", help="entry or column of the labels file (.npz, .pt, .parquet, .csv, .tsv)")
    g.add_argument("--types", help="type id per row (e.g. the word of each contextual embedding), for S_inter/S_intra")
    g.add_argument("--types-key", help="entry/column of the types file")
    g.add_argument("--metrics", help="comma-separated subset of metrics (default: all the inputs allow)")
    g.add_argument(
        "--sample",
        type=options.int_at_least(0, " (0: all rows)"),
        default=20_000,
        help="compute on a seeded sample of this many rows when larger (0: all rows; default 20000)",
    )
    g.add_argument("--seed", type=options.int_at_least(0), default=0, help="seed of the row sample and of k-means")
    g.add_argument(
        "--k-lid",
        type=options.int_at_least(2),
        default=20,
        help="neighbours for LID (default 20; at most the number of points - 1)",
    )
    options.device(g)
    g.add_argument("--format", choices=("table", "json"), default="table")
    g.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from ..arrays import load_array, load_matrix
    from ..metrics import METRIC_NAMES, METRIC_NEEDS, MetricInputError, geometry
    from ..run_inputs import run_inputs

    device = run_inputs(device=args.device).device
    metrics = None if args.metrics is None else [m.strip() for m in args.metrics.split(",") if m.strip()]
    if metrics is not None and not metrics:
        raise ValueError(f"--metrics is empty; choose from {', '.join(METRIC_NAMES)}")
    for name in metrics or ():
        needs = METRIC_NEEDS.get(name)
        if needs is not None and getattr(args, needs) is None:
            raise ValueError(f"metric {name!r} needs --{needs} (a file with one {needs[:-1]} per row)")
    X = torch.from_numpy(load_matrix(args.embeddings, args.key)).to(device)
    labels = (
        None
        if args.labels is None
        else load_array(args.labels, args.labels_key, preferred=("label", "labels", "y"), option="--labels-key")
    )
    types = (
        None
        if args.types is None
        else load_array(args.types, args.types_key, preferred=("type", "types", "word"), option="--types-key")
    )
    try:
        result = geometry(
            X, labels, types, metrics=metrics, sample=args.sample or None, seed=args.seed, k_lid=args.k_lid
        )
    except MetricInputError as exc:
        hint = " (or lower --k-lid)" if "lid_mle" in exc.metrics else ""
        others = [
            m
            for m in (metrics or METRIC_NAMES)
            if m not in exc.metrics and (METRIC_NEEDS[m] is None or getattr(args, METRIC_NEEDS[m]) is not None)
        ]
        fix = (
            f"leave {'them' if len(exc.metrics) > 1 else 'it'} out{hint}: --metrics {','.join(others)}"
            if others
            else "give more points"
        )
        raise ValueError(f"{args.embeddings}: {exc}. To compute the others, {fix}") from exc
    except ValueError as exc:  # the input's values or its labels and types: name the file each came from
        text = str(exc)
        culprit = args.labels if "label" in text else args.types if "type" in text else args.embeddings
        raise ValueError(f"{culprit}: {text}") from exc
    if args.format == "json":
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        width = max(len(k) for k in result)
        for k, v in result.items():
            shown = f"{int(v)}" if k in ("n_points", "dim", "cluster_k") else f"{v:.6f}"
            print(f"{k:<{width}}  {shown}")
    return 0
