"""``isoflow prepare``: a dataset fetched, verified and written as a task's canonical tables."""

from __future__ import annotations

import argparse

from . import options

HELP = "fetch a dataset (cache, mirror, canonical URL), verify it and write its canonical tables"


def add_parser(sub) -> None:
    p = sub.add_parser("prepare", help=HELP)
    p.add_argument(
        "task",
        help="polarity, snli, glue/<task> (cola sst2 mrpc qqp mnli qnli rte wnli), pos, pos-wordnet, supersense; "
        "or, with --from-file, the name of your own task",
    )
    options.data(p)
    p.add_argument(
        "--vocab",
        default="glove-50d",
        help="word tasks: static vectors whose vocabulary (frequency order) gives the words (default glove-50d; the "
        "paper: word2vec-222)",
    )
    options.force(p)
    p.add_argument(
        "--n-words",
        type=options.int_at_least(2),
        default=None,
        help="word tasks: how many words (default: the paper's 11,462 for pos-wordnet, 2,275 for supersense)",
    )
    p.add_argument(
        "--wordlist",
        default=None,
        help="supersense: a file with one noun per line (e.g. Tikhonov et al.'s list) instead of the vocabulary's "
        "first nouns",
    )
    p.add_argument(
        "--source-file", default=None, help="pos: a local CoDWoE complete file (.json or .csv) instead of fetching it"
    )
    p.add_argument(
        "--wordnet-dir",
        default=None,
        help="WordNet 3.0 database directory (default: $ISOFLOW_WORDNET, /usr/share/wordnet, or NLTK's wordnet.zip)",
    )
    p.add_argument("--offline", action="store_true", help="never download: use only the cache and the mirror")
    own = p.add_argument_group("your own data (CSV, TSV, JSONL or Parquet, by extension)")
    own.add_argument("--from-file", default=None, metavar="FILE", help="make the task from this file's columns")
    own.add_argument(
        "--text", default=None, metavar="COLUMN", help="the column holding the text (pairs: the first text)"
    )
    own.add_argument("--text-b", default=None, metavar="COLUMN", help="pairs: the column holding the second text")
    own.add_argument(
        "--label", default=None, metavar="COLUMN", help="the column holding the label (any strings or integers)"
    )
    own.add_argument(
        "--label-sep", default=None, metavar="SEP", help="multi-label: the labels of a row are separated by SEP"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..datasets import prepare

    if args.from_file is not None or args.text or args.label:
        if not (args.from_file and args.text and args.label):
            raise ValueError(
                "your own data needs --from-file FILE, --text COLUMN and --label COLUMN (pairs also --text-b COLUMN)"
            )
        columns = {
            "path": args.from_file,
            "text": args.text,
            "text_b": args.text_b,
            "label": args.label,
            "label_sep": args.label_sep,
        }
        out = prepare(args.task, data_dir=args.data_dir, out=args.out, force=args.force, from_file=columns)
        return _summary(out)
    wordlist = None
    if args.wordlist:
        wordlist = [w.strip() for w in open(args.wordlist, encoding="utf-8") if w.strip()]
    out = prepare(
        args.task,
        data_dir=args.data_dir,
        out=args.out,
        mirror=args.mirror,
        vocab=args.vocab,
        n_words=args.n_words,
        wordlist=wordlist,
        source_file=args.source_file,
        wordnet_dir=args.wordnet_dir,
        allow_download=not args.offline,
        progress=not args.quiet,
        raw_dir=args.raw_dir,
        force=args.force,
    )
    return _summary(out)


def _summary(out) -> int:
    from ..datasets import read_task

    meta = read_task(out).meta()
    print(
        f"{meta['task']}: {meta['n_examples']} examples, {meta['n_items']} distinct items, labels "
        f"{meta['label_names'][:8]}"
        f"{' ...' if len(meta['label_names']) > 8 else ''} -> {out}"
    )
    return 0
