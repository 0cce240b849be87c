"""``isoflow finetune``: a sentence encoder fine-tuned with the I-STAR penalty, measured on held-out data."""

from __future__ import annotations

import argparse
import json

from .. import settings as declared
from . import options

HELP = "fine-tune a sentence encoder (+ classification head) with I-STAR or CosReg, measured on held-out data"


def add_parser(sub) -> None:
    from ..finetune.settings import FinetuneSettings

    f = sub.add_parser("finetune", help=HELP)
    f.add_argument("--task", required=True, help="a prepared single-label task, e.g. polarity, glue/sst2, glue/mrpc")
    options.model(f, static=False, extra=": mean pooling is added")
    options.istar(f, zeta=False)
    f.add_argument(
        "--cosreg-weight",
        type=options.finite_float,
        default=None,
        help="CosReg instead of I-STAR: add COSREG_WEIGHT * mean pairwise cosine of the points to the loss (the "
        "poster's baseline)",
    )
    options.renamed(f, "--cosreg", "--cosreg-weight")
    f.add_argument(
        "--meandir-weight",
        type=options.finite_float,
        default=None,
        help="the mean-direction control instead of I-STAR: a second loss on the same points that does not target "
        "their isotropy (isoflow.istar.MeanDirectionLoss); with --matched-pull-from, in units of that pull",
    )
    declared.add_arguments(f, FinetuneSettings)
    f.add_argument(
        "--lr-from",
        default=None,
        metavar="CHOICE",
        help="take the learning rate from a choice file of `isoflow finetune-lr` (overrides --lr; recorded)",
    )
    f.add_argument(
        "--states-out",
        default=None,
        metavar="PATH",
        help="with --states-points: where the token states go (default: <out>.states.pt; isoflow finetune-seed-floor "
        "reads them)",
    )
    f.add_argument(
        "--lr-candidate",
        action="store_true",
        help="a plain run (no regulariser) that `isoflow finetune-lr` chooses the learning rate from: placed at "
        "<results>/finetune/runs/<task>/<model>/lr-selection/lr<LR>/seed<S> instead of the sweep's place",
    )
    options.task_dir(f)
    options.results(f)
    options.device(f)
    options.data(f)
    f.set_defaults(func=run)


def regulariser(args: argparse.Namespace) -> dict:
    """The run's regulariser and every regulariser's weight (``reg``, ``istar_lambda``, ``cosreg_weight``,
    ``meandir_weight``) from its options; a ValueError when two are named."""
    from ..finetune.settings import REGULARISERS, weight_option

    given = {"cosreg": args.cosreg_weight, "meandir": args.meandir_weight}
    named = (["istar"] if args.istar_lambda else []) + [reg for reg, w in given.items() if w is not None]
    if len(named) > 1:
        flags = " and ".join(weight_option(r, "").strip() for r in named)
        raise ValueError(f"{flags} name two regularisers; a run has one (the other's weight is 0)")
    reg = next((r for r, w in given.items() if w is not None), "istar")
    return {"reg": reg, "istar_lambda": args.istar_lambda, **{REGULARISERS[r]: w or 0.0 for r, w in given.items()}}


def run(args: argparse.Namespace) -> int:
    from ..finetune.run import run_finetune  # the module itself: DVC's stage deps follow imports
    from ..finetune.settings import REGULARISERS, FinetuneSettings

    weights = regulariser(args)
    reg = weights["reg"]
    settings = {
        k: v
        for k, v in vars(declared.from_namespace(FinetuneSettings, args, task="", model="", **weights)).items()
        if k not in ("task", "model", "seed")
    }
    lr_choice = None
    if args.lr_from:
        from ..finetune.learning_rate import chosen_lr

        settings["lr"], lr_choice = chosen_lr(args.lr_from)
    parquet, record = run_finetune(
        args.task,
        options.model_spec(args),
        args.seed,
        data_dir=args.data_dir,
        task_path=args.task_dir,
        results=args.results,
        out=args.out,
        device=args.device,
        mirror=args.mirror,
        raw_dir=args.raw_dir,
        progress=None if not args.quiet else False,
        lr_choice=lr_choice,
        states_out=args.states_out,
        lr_candidate=args.lr_candidate,
        **settings,
    )
    info = json.loads(record.read_text())
    status = f"diverged at epoch {info['diverged_at']}" if info.get("diverged") else f"{args.epochs} epoch(s)"
    weight = f"{REGULARISERS[reg]} {weights[REGULARISERS[reg]]:g}"
    print(
        f"{info['settings']['task']} x {info['settings']['model']} {weight} seed {args.seed}: {status}, "
        f"{info['n_train']} training / "
        f"{info['n_heldout']} held-out examples ({info['held_out']['source']}), "
        f"{info['train_sentences_per_second'] or 0:.0f} sentences/s training -> {parquet}"
    )
    return 0
