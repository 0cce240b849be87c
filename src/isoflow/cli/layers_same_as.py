"""``isoflow layers-same-as``: layer analyses compared with their namesakes made elsewhere, table by table."""

from __future__ import annotations

import argparse

HELP = "compare every layer analysis two runs folders both hold (a rerun against the runs made before): what moved"


def add_parser(sub) -> None:
    p = sub.add_parser("layers-same-as", help=HELP)
    p.add_argument("old", help="a layers runs folder (<model>/<corpus>/, cross/...), e.g. docs/results/layers/runs")
    p.add_argument("new", help="the runs folder of the analyses made again, e.g. results/reproduce-offline/layers/runs")
    p.add_argument("--out", required=True, help="a folder: <run>.json each (<model>/<corpus>.json, ...), the table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..atomic import write_json
    from ..layers.same_as import CAPTION, compare_folders, moves_table
    from ..reporting.tables import write_table

    compared, old_only, new_only = compare_folders(args.old, args.new)
    if not compared:
        runs = "<model>/<corpus>/meta.json, cross/<a>/<b>/<corpus>/cross.json"
        raise ValueError(f"{args.new}: no layer run ({runs}) that {args.old} also holds")
    out = Path(args.out)
    for c in compared:
        write_json(out / f"{c['identity']}.json", c)
        moved = sorted({col for t in c["tables"].values() for col in t["columns_differing"]})
        print(f"{c['identity']}: {'identical' if c['identical'] else f'{len(moved)} columns moved'}")
    for folder, only in ((args.old, old_only), (args.new, new_only)):
        if only:
            print(f"in {folder} only, not compared: {', '.join(only)}")
    write_table(moves_table(compared), out / "layers_same_as", caption=CAPTION, floatfmt="%.3g")
    print(f"-> {out / 'layers_same_as.md'}")
    return 0
