"""``isoflow pretrain-corpus`` and ``isoflow pretrain``: a plain language model of our own, from offline text."""

from __future__ import annotations

import argparse

from .. import settings as declared
from . import options

CORPUS_HELP = "assemble the pretraining corpus: Brown, WordNet's glosses or text files, without any task's text"
HELP = "train a tokenizer and a plain masked (BERT-style) or causal (GPT-2-style) LM from scratch on a pretraining corpus"


def add_parser(sub) -> None:
    from ..pretrain.corpus import BUILT_IN_SOURCES, SENTENCE_TASKS
    from ..pretrain.settings import CorpusSettings, PretrainSettings

    c = sub.add_parser("pretrain-corpus", help=CORPUS_HELP)
    c.add_argument("--source", action="append", default=None,
                   help=f"{', '.join(BUILT_IN_SOURCES)} or a UTF-8 text file (a sentence per line, documents separated by empty lines); "
                        f"repeatable (default: {' and '.join(BUILT_IN_SOURCES)})")
    c.add_argument("--exclude-task", action="append", default=None,
                   help="a task whose texts (training and validation splits) must not be in the corpus; repeatable "
                        f"(default: every built-in sentence task: {', '.join(SENTENCE_TASKS)})")
    c.add_argument("--wordnet-dir", default=None, help="a WordNet 3.0 database directory (default: $ISOFLOW_WORDNET, /usr/share/wordnet)")
    declared.add_arguments(c, CorpusSettings)
    options.force(c)
    options.data(c, out="the corpus folder (required)")
    c.set_defaults(func=run_corpus)

    p = sub.add_parser("pretrain", help=HELP)
    p.add_argument("--corpus", required=True, help="a folder written by `isoflow pretrain-corpus`")
    p.add_argument("--out", required=True, help="the model folder to write (checkpoints go to <out>.checkpoint while it trains)")
    declared.add_arguments(p, PretrainSettings)
    options.device(p)
    options.force(p)
    options.quiet(p)
    p.set_defaults(func=run)


def run_corpus(args: argparse.Namespace) -> int:
    from ..pretrain.corpus import BUILT_IN_SOURCES, SENTENCE_TASKS, build_corpus
    from ..pretrain.settings import CorpusSettings

    if not args.out:
        raise ValueError("--out is required: the folder the corpus is written to")
    out = build_corpus(args.out, sources=args.source or BUILT_IN_SOURCES, exclude_tasks=args.exclude_task or SENTENCE_TASKS,
                       settings=declared.from_namespace(CorpusSettings, args), data_dir=args.data_dir, raw_dir=args.raw_dir,
                       mirror=args.mirror, wordnet_dir=args.wordnet_dir, force=args.force, log=_say(args.quiet))
    print(f"pretraining corpus -> {out}")
    return 0


def run(args: argparse.Namespace) -> int:
    from ..pretrain import run_pretrain
    from ..pretrain.settings import PretrainSettings

    run_pretrain(args.corpus, args.out, declared.from_namespace(PretrainSettings, args), device=args.device, force=args.force,
                 progress=None if not args.quiet else False, log=_say(args.quiet))
    return 0


def _say(quiet: bool):
    import sys

    return (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr, flush=True))
