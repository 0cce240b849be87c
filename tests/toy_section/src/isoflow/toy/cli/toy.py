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
    from isoflow.records import run_provenance, write_run
    from isoflow.run_inputs import run_inputs

    from .. import measure
    from ..settings import ToySettings

    settings = declared.from_namespace(ToySettings, args)
    declared.check(settings)
    inputs = run_inputs(device="cpu")
    record = {**measure(args.seed, settings), "device": str(inputs.device), **run_provenance()}
    write_run(args.out, record)
    return 0
