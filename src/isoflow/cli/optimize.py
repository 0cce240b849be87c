"""``isoflow optimize``: the optimisation experiment, one run per seed (Mickus et al.; I-STAR with ``--istar``)."""

from __future__ import annotations

import argparse
import json

from . import options

HELP = "train embeddings + a linear classifier, recording silhouette and IsoScore after every update"


def add_parser(sub) -> None:
    o = sub.add_parser("optimize", help=HELP)
    o.add_argument("--task", required=True, help="a prepared task, e.g. polarity, snli, glue/cola, supersense")
    o.add_argument("--model", required=True, help="the model whose embeddings are optimised (see `isoflow encode`)")
    seed = o.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=options.int_at_least(0), default=None, help="seeds the classifier's initialisation and the per-update samples (default 0)")
    seed.add_argument("--seeds", type=options.seed_list, default=None, metavar="S,S,...",
                      help="several seeds in this one process (records identical to separate runs); --out then needs {seed}")
    o.add_argument("--steps", type=options.int_at_least(1), default=None, help="number of updates (default: 1000; GLUE tasks 250, as in the paper)")
    options.device(o)
    o.add_argument("--lr", type=options.positive_float, default=1e-3, help="Adam learning rate (default 1e-3)")
    o.add_argument("--sample-cap", type=options.int_at_least(2), default=20_000,
                   help="measure sets larger than this on a fresh random sample of this size per update (default 20000)")
    o.add_argument("--extra-every", type=options.int_at_least(0, " (0: never)"), default=0,
                   help="also record cosine anisotropy, LID and TwoNN of the table every K updates (default 0: never)")
    o.add_argument("--label-centred-every", type=options.int_at_least(0, " (0: never)"), default=0, metavar="K",
                   help="every K updates also record IsoScore after removing each label cluster's mean, and S_intra within classes")
    options.istar(o)
    o.add_argument("--istar-shrinkage", choices=("pretrained", "isotropic"), default="pretrained",
                   help="IsoScore*'s shrinkage target: the pretrained table's covariance (default) or its isotropic counterpart")
    o.add_argument("--keep-diverged", action="store_true", help="if the run diverges (NaN), write a record saying so instead of nothing (sweeps)")
    o.add_argument("--data-dir", default="data", help="where the prepared tasks and embeddings are (default: data)")
    options.task_dir(o)
    o.add_argument("--embeddings", default=None, help="the embeddings directory (default <data-dir>/embeddings/<model>/<task>)")
    options.results(o)
    o.add_argument("--out", default=None, help="output path without suffix (default results/optimize/runs/<task>/<model>/seed<S>, with --istar results/istar/runs/<task>/<model>/istar<LAMBDA>/seed<S>)")
    options.quiet(o)
    o.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..optimize import run_seeds

    seeds = args.seeds or [0 if args.seed is None else args.seed]
    written = run_seeds(args.task, args.model, seeds, steps=args.steps, data_dir=args.data_dir, task_path=args.task_dir,
                        embeddings_path=args.embeddings, out=args.out, results=args.results, device=args.device,
                        progress=None if not args.quiet else False, lr=args.lr, sample_cap=args.sample_cap, extra_every=args.extra_every,
                        label_centred_every=args.label_centred_every, istar_lambda=args.istar, zeta=args.zeta,
                        shrinkage=args.istar_shrinkage, keep_diverged=args.keep_diverged)
    for seed, (parquet, meta) in zip(seeds, written):
        info = json.loads(meta.read_text())
        lam = f" lambda {args.istar:g}" if args.istar else ""
        status = f"diverged at step {info['diverged_at_step']}" if info.get("diverged") else f"{info['settings']['steps']} updates"
        print(f"{info['settings']['task']} x {args.model}{lam} seed {seed}: {status} in "
              f"{info['loop_seconds']:.1f} s ({info['seconds_per_update'] * 1000:.0f} ms/update on {info['device']}) -> {parquet}")
    return 0
