"""``isoflow optimize``: the optimisation experiment, one run per seed (Mickus et al.; I-STAR with
``--istar-lambda``)."""

from __future__ import annotations

import argparse
import json

from .. import settings as declared
from . import options

HELP = "train embeddings + a linear classifier, recording silhouette and IsoScore after every update"


def add_parser(sub) -> None:
    from ..optimize.settings import STEPS, Settings

    o = sub.add_parser("optimize", help=HELP)
    o.add_argument("--task", required=True, help="a prepared task, e.g. polarity, snli, glue/cola, supersense")
    o.add_argument("--model", required=True, help="the model whose embeddings are optimised (see `isoflow encode`)")
    seed = o.add_mutually_exclusive_group()
    seed.add_argument(
        "--seed",
        type=options.int_at_least(0),
        default=None,
        help="seeds the classifier's initialisation and the per-update samples (default 0)",
    )
    seed.add_argument(
        "--seeds",
        type=options.seed_list,
        default=None,
        metavar="S,S,...",
        help="several seeds in this one process (records identical to separate runs); --out then needs {seed}",
    )
    o.add_argument(
        "--steps",
        type=options.int_at_least(1),
        default=None,
        help=f"number of updates (default: {STEPS['default']}; GLUE tasks {STEPS['glue']}, as in the paper)",
    )
    options.device(o)
    options.istar(o, zeta=False)
    declared.add_arguments(o, Settings)
    o.add_argument(
        "--keep-diverged",
        action="store_true",
        help="if the run diverges (NaN), write a record saying so instead of nothing (sweeps)",
    )
    o.add_argument("--data-dir", default="data", help="where the prepared tasks and embeddings are (default: data)")
    options.task_dir(o)
    o.add_argument(
        "--embeddings", default=None, help="the embeddings directory (default <data-dir>/embeddings/<model>/<task>)"
    )
    options.results(o)
    o.add_argument(
        "--out",
        default=None,
        help="output path without suffix (default results/optimize/runs/<task>/<model>/seed<S>, with "
        "--istar-lambda results/istar/runs/<task>/<model>/istar<ISTAR_LAMBDA>/seed<S>)",
    )
    options.quiet(o)
    o.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimize.run import run_seeds  # the module itself: DVC's stage deps follow imports
    from ..optimize.settings import Settings

    seeds = args.seeds or [0 if args.seed is None else args.seed]
    written = run_seeds(
        args.task,
        args.model,
        seeds,
        steps=args.steps,
        data_dir=args.data_dir,
        task_path=args.task_dir,
        embeddings_path=args.embeddings,
        out=args.out,
        results=args.results,
        device=args.device,
        progress=None if not args.quiet else False,
        istar_lambda=args.istar_lambda,
        keep_diverged=args.keep_diverged,
        **declared.cli_values(Settings, args),
    )
    for seed, (parquet, meta) in zip(seeds, written):
        info = json.loads(meta.read_text())
        lam = f" istar_lambda {args.istar_lambda:g}" if args.istar_lambda else ""
        status = (
            f"diverged at step {info['diverged_at']}"
            if info.get("diverged")
            else f"{info['settings']['steps']} updates"
        )
        print(
            f"{info['settings']['task']} x {args.model}{lam} seed {seed}: {status} in "
            f"{info['loop_seconds']:.1f} s ({info['seconds_per_update'] * 1000:.0f} ms/update on {info['device']}) -> "
            f"{parquet}"
        )
    return 0
