"""``isoflow stability``: IsoScore and IsoScore* on mini-batches of point clouds of known isotropy."""

from __future__ import annotations

import argparse
import json

from . import options

HELP = "IsoScore and IsoScore* on mini-batches of Gaussian clouds of known isotropy: table, figure and every estimate"


def _numbers(cast, low, high=None):
    def parse(text: str):
        try:
            values = [cast(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers, e.g. 8,16,32; got {text!r}") from None
        if not values or min(values) < low or (high is not None and max(values) > high):
            raise argparse.ArgumentTypeError(f"expected numbers in [{low}, {high if high is not None else '...'}]; got {text!r}")
        return values
    return parse


def add_parser(sub) -> None:
    from ..stability import DEFAULTS

    s = sub.add_parser("stability", help=HELP)
    s.add_argument("--dims", type=_numbers(int, 2), default=list(DEFAULTS["dims"]), metavar="D,D", help="default 384,768")
    s.add_argument("--true-isoscores", type=_numbers(float, 1e-9, 1.0), default=list(DEFAULTS["true_isoscores"]), metavar="T,T",
                   help="population IsoScores of the clouds (default 0.1,0.2,...,1.0)")
    s.add_argument("--batch-sizes", type=_numbers(int, 2), default=list(DEFAULTS["batch_sizes"]), metavar="N,N",
                   help="points per mini-batch (default 8,16,...,1024)")
    s.add_argument("--zetas", type=_numbers(float, 0.0, 1.0), default=list(DEFAULTS["zetas"]), metavar="Z,Z",
                   help="shrinkage weights; 0 is plain IsoScore (default 0,0.1,0.2,0.5)")
    s.add_argument("--repeats", type=options.int_at_least(1), default=DEFAULTS["repeats"], help="batches per setting (default 20)")
    s.add_argument("--reference-points", type=options.int_at_least(2), default=DEFAULTS["reference_points"],
                   help="points of the fresh sample Sigma_S is estimated from (default 100000)")
    s.add_argument("--seed", type=options.int_at_least(0), default=DEFAULTS["seed"])
    options.device(s)
    s.add_argument("--runs", default="results/stability/runs", help="where every batch's estimate goes (runs.parquet, meta.json)")
    options.report_outputs(s, "stability")
    options.quiet(s)
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from ..atomic import atomic_file
    from ..devices import resolve_device
    from ..records import run_provenance
    from ..stability import figure, simulate, tables

    settings = {"dims": args.dims, "true_isoscores": args.true_isoscores, "batch_sizes": args.batch_sizes, "zetas": args.zetas,
                "repeats": args.repeats, "reference_points": args.reference_points, "seed": args.seed}
    report = None if args.quiet else (lambda k, n: print(f"stability: {k}/{n} clouds", file=sys.stderr, flush=True))
    runs = simulate(**settings, device=resolve_device(args.device), progress=report)
    out = Path(args.runs)
    with atomic_file(out / "runs.parquet") as tmp:
        runs.to_parquet(tmp, index=False)
    with atomic_file(out / "meta.json") as tmp:
        tmp.write_text(json.dumps({"settings": settings, **run_provenance(), "complete": True}, indent=2) + "\n")
    written = tables(runs, args.tables) + figure(runs, args.figures)
    print(f"{len(runs)} estimates -> {out / 'runs.parquet'}; wrote {len(written)} files under {args.tables} and {args.figures}")
    return 0
