"""``isoflow prepare``: a dataset fetched, verified and written as a task's canonical tables."""

from __future__ import annotations

import argparse

from . import options

HELP = "fetch a dataset (cache, mirror, canonical URL), verify it and write its canonical tables"


def add_parser(sub) -> None:
    p = sub.add_parser("prepare", help=HELP)
    p.add_argument("dataset", help="polarity, snli, glue/<task> (cola sst2 mrpc qqp mnli qnli rte wnli), pos, pos-wordnet, supersense")
    options.data(p)
    p.add_argument("--vocab", default="glove-50d",
                   help="word tasks: static vectors whose vocabulary (frequency order) gives the words (default glove-50d; the paper: word2vec-222)")
    options.force(p)
    p.add_argument("--n-words", type=options.int_at_least(2), default=None,
                   help="word tasks: how many words (default: the paper's 11,462 for pos-wordnet, 2,275 for supersense)")
    p.add_argument("--wordlist", default=None, help="supersense: a file with one noun per line (e.g. Tikhonov et al.'s list) instead of the vocabulary's first nouns")
    p.add_argument("--source-file", default=None, help="pos: a local CoDWoE complete file (.json or .csv) instead of fetching it")
    p.add_argument("--wordnet-dir", default=None, help="WordNet 3.0 database directory (default: $ISOFLOW_WORDNET, /usr/share/wordnet, or NLTK's wordnet.zip)")
    p.add_argument("--offline", action="store_true", help="never download: use only the cache and the mirror")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..datasets import prepare, read_task

    wordlist = None
    if args.wordlist:
        wordlist = [w.strip() for w in open(args.wordlist, encoding="utf-8") if w.strip()]
    out = prepare(args.dataset, data_dir=args.data_dir, out=args.out, mirror=args.mirror, vocab=args.vocab, n_words=args.n_words,
                  wordlist=wordlist, source_file=args.source_file, wordnet_dir=args.wordnet_dir, allow_download=not args.offline,
                  progress=not args.quiet, raw_dir=args.raw_dir, force=args.force)
    meta = read_task(out).meta()
    print(f"{meta['task']}: {meta['n_examples']} examples, {meta['n_items']} distinct items, labels {meta['label_names'][:8]}"
          f"{' ...' if len(meta['label_names']) > 8 else ''} -> {out}")
    return 0
