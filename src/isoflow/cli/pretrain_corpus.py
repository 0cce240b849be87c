"""``isoflow pretrain-corpus``: the pretraining corpus, without any task's text."""

from __future__ import annotations

import argparse

from .. import settings as declared
from . import options
from .options import say

HELP = "assemble the pretraining corpus: Brown, WordNet's glosses or text files, without any task's text"


def add_parser(sub) -> None:
    from ..pretrain.corpus import BUILT_IN_SOURCES, SENTENCE_TASKS
    from ..pretrain.settings import CorpusSettings

    c = sub.add_parser("pretrain-corpus", help=HELP)
    c.add_argument(
        "--source",
        action="append",
        default=None,
        help=f"{', '.join(BUILT_IN_SOURCES)} or a UTF-8 text file (a sentence per line, documents separated by empty "
        f"lines); "
        f"repeatable (default: {' and '.join(BUILT_IN_SOURCES)})",
    )
    c.add_argument(
        "--exclude-task",
        action="append",
        default=None,
        help="a task whose texts (training and validation splits) must not be in the corpus; repeatable "
        f"(default: every built-in sentence task: {', '.join(SENTENCE_TASKS)})",
    )
    c.add_argument(
        "--wordnet-dir",
        default=None,
        help="a WordNet 3.0 database directory (default: $ISOFLOW_WORDNET, /usr/share/wordnet)",
    )
    declared.add_arguments(c, CorpusSettings)
    options.force(c)
    options.data(c, out="the corpus folder (required)")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..pretrain.corpus import BUILT_IN_SOURCES, SENTENCE_TASKS, build_corpus
    from ..pretrain.settings import CorpusSettings

    if not args.out:
        raise ValueError("--out is required: the folder the corpus is written to")
    out = build_corpus(
        args.out,
        sources=args.source or BUILT_IN_SOURCES,
        exclude_tasks=args.exclude_task or SENTENCE_TASKS,
        settings=declared.from_namespace(CorpusSettings, args),
        data_dir=args.data_dir,
        raw_dir=args.raw_dir,
        mirror=args.mirror,
        wordnet_dir=args.wordnet_dir,
        force=args.force,
        log=say(args.quiet),
    )
    print(f"pretraining corpus -> {out}")
    return 0
