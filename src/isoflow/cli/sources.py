"""``isoflow sources``: every dataset and model source isoflow knows, as Markdown."""

from __future__ import annotations

import argparse

HELP = "list every dataset and model source: canonical location, sha256, license (Markdown)"


def add_parser(sub) -> None:
    s = sub.add_parser("sources", help=HELP)
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:  # noqa: ARG001 (every command's signature)
    from ..sources import sources_markdown

    print(sources_markdown())
    return 0
