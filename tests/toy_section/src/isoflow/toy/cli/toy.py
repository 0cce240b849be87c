"""``isoflow toy``: one run of the toy section."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    from isoflow import settings as declared

    from ..settings import ToySettings

    s = sub.add_parser("toy", help="the IsoScore of one seeded Gaussian cloud")
    declared.add_arguments(s, ToySettings)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--out", required=True, help="the run's record (JSON)")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from isoflow import settings as declared
    from isoflow.run_inputs import run_inputs
    from isoflow.skeleton import Outcome, Place, run_section

    from .. import measure
    from ..settings import ToySettings

    settings = declared.from_namespace(ToySettings, args)  # the skeleton: settings checked,
    declared.check(settings)
    inputs = run_inputs(device="cpu")  # inputs resolved, then the body, its record written last and atomically
    body = lambda: Outcome(declared.as_dict(settings), {**measure(args.seed, settings), "device": str(inputs.device)})  # noqa: E731
    run_section("toy", Place(args.out), body)
    return 0
