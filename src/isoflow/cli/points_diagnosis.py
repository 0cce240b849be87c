"""``isoflow points-diagnosis``: which points I-STAR's penalty should see on each model, measured at the pretrained
model before any training (docs/results/istar-points)."""

from __future__ import annotations

import argparse
import json

from . import options

HELP = "IsoScore*, dimensions, top-direction share and the penalty's pull per model and points recipe (no training)"


def add_parser(sub) -> None:
    p = sub.add_parser("points-diagnosis", help=HELP)
    p.add_argument(
        "--models", nargs="+", help="built-in names, folders, hub ids or GGUF files (required but with --report-only)"
    )
    p.add_argument("--task", default="glue/sst2", help="a prepared single-label task (default glue/sst2)")
    p.add_argument("--batches", type=options.int_at_least(1), default=5, help="batches of 32 sentences (default 5)")
    p.add_argument("--recipes", nargs="+", default=None, help="points recipes (default: every one)")
    options.task_dir(p)
    options.data(p, out="the folder for points_diagnosis.json, tables/ and figures/")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: tables/ and figures/ again from --out's points_diagnosis.json (after a change to the "
        "report code; `make redraw`)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..finetune.points_diagnosis import diagnose_points
    from ..finetune.points_report import write_report

    if not args.out:
        raise ValueError("points-diagnosis needs --out (the folder for points_diagnosis.json, tables/ and figures/)")
    if args.report_only:
        write_report(args.out)
        return 0
    if not args.models:
        raise ValueError("points-diagnosis needs --models (the models to measure), or --report-only to redraw")
    result = diagnose_points(
        args.models,
        args.task,
        args.out,
        data_dir=args.data_dir,
        task_path=args.task_dir,
        raw_dir=args.raw_dir,
        mirror=args.mirror,
        batches=args.batches,
        recipes=args.recipes,
    )
    write_report(args.out)
    print(json.dumps({m: r["chosen"] for m, r in result["models"].items()}, indent=2))
    return 0
