"""``isoflow toy-report``: the toy section's table and figure from its runs."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    s = sub.add_parser("toy-report", help="the toy section's table and figure")
    s.add_argument("runs", nargs="+", help="the runs' records")
    s.add_argument("--table", required=True)
    s.add_argument("--figure", required=True)
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from isoflow.atomic import atomic_file

    rows = pd.DataFrame([json.loads(open(p, encoding="utf-8").read()) for p in args.runs])[["seed", "isoscore"]]
    with atomic_file(args.table) as tmp:
        rows.sort_values("seed").to_csv(tmp, index=False)
    fig, ax = plt.subplots()
    ax.bar(rows["seed"].astype(str), rows["isoscore"], label="IsoScore")
    ax.set(xlabel="seed", ylabel="IsoScore", ylim=(0, 1))
    ax.legend()
    with atomic_file(args.figure) as tmp:
        fig.savefig(tmp, format="png")
    return 0
