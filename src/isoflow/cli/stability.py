"""``isoflow stability``: IsoScore and IsoScore* on mini-batches of point clouds of known isotropy."""

from __future__ import annotations

import argparse

from .. import settings as declared
from ..layout import runs_dir
from . import options

HELP = "IsoScore and IsoScore* on mini-batches of Gaussian clouds of known isotropy: table, figure and every estimate"


def add_parser(sub) -> None:
    from ..stability import StabilitySettings

    s = sub.add_parser("stability", help=HELP)
    declared.add_arguments(s, StabilitySettings)
    options.device(s)
    s.add_argument(
        "--runs",
        default=runs_dir("results", "stability"),
        help="where every batch's estimate goes (runs.parquet, meta.json)",
    )
    s.add_argument(
        "--from-runs",
        action="store_true",
        help="draw the table and figure from the estimates already in --runs, simulating nothing (make redraw)",
    )
    options.report_outputs(s, "stability")
    options.quiet(s)
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from ..run_inputs import run_inputs
    from ..settings import as_dict
    from ..skeleton import Outcome, Place, run_section
    from ..stability import StabilitySettings, figure, simulate, tables

    out = Path(args.runs)
    if args.from_runs:
        import pandas as pd

        runs = pd.read_parquet(out / "runs.parquet")
        written = tables(runs, args.tables) + figure(runs, args.figures)
        print(f"{len(runs)} estimates from {out / 'runs.parquet'}; wrote {len(written)} files")
        return 0
    settings = declared.from_namespace(StabilitySettings, args)
    report = None if args.quiet else (lambda k, n: print(f"stability: {k}/{n} clouds", file=sys.stderr, flush=True))
    runs = simulate(settings, device=run_inputs(device=args.device).device, progress=report)
    # A run of files: nothing to check before the work, so the simulation need not be the skeleton's body.
    outcome = Outcome(as_dict(settings), {"estimates": len(runs)}, [(out / "runs.parquet", runs)])
    run_section("stability", Place(out / "meta.json"), lambda: outcome)
    written = tables(runs, args.tables) + figure(runs, args.figures)
    print(
        f"{len(runs)} estimates -> {out / 'runs.parquet'}; wrote {len(written)} files under {args.tables} and "
        f"{args.figures}"
    )
    return 0
