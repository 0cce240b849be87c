"""``isoflow finetune-same-as``: a fine-tuning run compared bit for bit with its namesake made elsewhere."""

from __future__ import annotations

import argparse

HELP = "compare a fine-tuning run bit for bit with the run of the same identity made elsewhere (determinism, reruns)"


def add_parser(sub) -> None:
    p = sub.add_parser("finetune-same-as", help=HELP)
    p.add_argument("run", help="a run record (<stem>.json) of `isoflow finetune`")
    p.add_argument("other", help="the record of the same task, model, weight and seed made elsewhere")
    p.add_argument("--out", required=True, help="where the comparison goes (JSON; the report's finetune_same_as)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..atomic import write_json
    from ..finetune.same_as import compare_runs

    compared = compare_runs(args.run, args.other)
    write_json(args.out, compared)
    differing = {**compared["epochs"]["columns_differing"], **compared["steps"]["columns_differing"]}
    verdict = "identical" if compared["identical"] else f"differs in {', '.join(sorted(differing)) or 'its shape'}"
    print(f"{args.run} against {args.other}: {verdict} -> {args.out}")
    return 0
