"""``isoflow layers-cross``: linear CKA between every layer of one model and every layer of another, on the same
words of a corpus."""

from __future__ import annotations

import argparse

from . import options

HELP = "linear CKA between two models' layers on the same words (word states: the mean of a word's pieces)"


def add_parser(sub) -> None:
    from ..layers import CROSS_WORDS
    from ..layers.settings import BATCH_SIZE

    y = sub.add_parser("layers-cross", help=HELP)
    options.model(y, static=False, extra="; encoders and decoder-only models such as GPT-2")
    y.add_argument("--other", required=True, help="the second model, given as --model is")
    y.add_argument("--other-name", default=None, help="the name the second model's rows go under, as --model-name")
    y.add_argument(
        "--other-revision", default=None, metavar="NAME", help="the second model's checkpoint, as --revision"
    )
    options.dtype(y, other=True)
    options.corpus(y)
    y.add_argument(
        "--words",
        type=options.int_at_least(4),
        default=CROSS_WORDS,
        help=f"whole sentences in the seeded order until this many words (default {CROSS_WORDS})",
    )
    y.add_argument("--seed", type=int, default=0, help="the seed of the sentences' order (default 0)")
    options.layer_run(y, "results/layers/runs/cross/<model>/<other>/<corpus>", BATCH_SIZE)
    y.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..layers.cross import run_cross  # the module itself: DVC's stage deps follow imports
    from ..models.spec import ModelSpec

    out = run_cross(
        options.model_spec(args),
        ModelSpec(args.other, args.other_name, args.other_revision, args.other_dtype or args.dtype),
        args.corpus,
        n_words=args.words,
        seed=args.seed,
        out=args.out,
        results=args.results,
        data_dir=args.data_dir,
        raw_dir=args.raw_dir,
        mirror=args.mirror,
        device=args.device,
        batch_size=args.batch_size,
        force=args.force,
        corpus_name=args.corpus_name,
    )
    meta = json.loads((out / "cross.json").read_text())
    a, b = meta["layers"]
    print(
        f"{meta['model_a']} ({a} states) x {meta['model_b']} ({b} states) on {meta['words_sampled']} words of "
        f"{meta['corpus']}: {meta['seconds']:.0f} s -> {out}"
    )
    return 0
