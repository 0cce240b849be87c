"""The ``isoflow`` command line: thin wrappers over the library (the science lives in the modules)."""

from __future__ import annotations

import argparse
import json
import sys


def _geometry(args: argparse.Namespace) -> int:
    import torch

    from .arrays import load_array
    from .devices import resolve_device
    from .metrics import METRIC_NAMES, geometry

    device = resolve_device(args.device)
    X = torch.from_numpy(load_array(args.embeddings, args.key)).to(device)
    labels = None if args.labels is None else load_array(args.labels, args.labels_key, preferred=("label", "labels", "y"))
    types = None if args.types is None else load_array(args.types, args.types_key, preferred=("type", "types", "word"))
    metrics = None if args.metrics is None else [m.strip() for m in args.metrics.split(",") if m.strip()]
    if metrics is not None and not metrics:
        raise ValueError(f"--metrics is empty; choose from {', '.join(METRIC_NAMES)}")
    result = geometry(X, labels, types, metrics=metrics, sample=args.sample or None, seed=args.seed, k_lid=args.k_lid)
    if args.format == "json":
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        width = max(len(k) for k in result)
        for k, v in result.items():
            shown = f"{int(v)}" if k in ("n_points", "dim", "cluster_k") else f"{v:.6f}"
            print(f"{k:<{width}}  {shown}")
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from .datasets import prepare, read_task

    wordlist = None
    if args.wordlist:
        wordlist = [w.strip() for w in open(args.wordlist, encoding="utf-8") if w.strip()]
    out = prepare(
        args.dataset,
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
    )
    meta = read_task(out).meta()
    print(f"{meta['task']}: {meta['n_examples']} examples, {meta['n_items']} distinct items, labels {meta['label_names'][:8]}"
          f"{' ...' if len(meta['label_names']) > 8 else ''} -> {out}")
    return 0


def _encode(args: argparse.Namespace) -> int:
    from .embed import encode, load_embeddings

    out = encode(
        args.model,
        args.dataset,
        data_dir=args.data_dir,
        task_path=args.task_dir,
        out=args.out,
        batch_size=args.batch_size,
        device=args.device,
        mirror=args.mirror,
        force=args.force,
        progress=None if not args.quiet else False,
        raw_dir=args.raw_dir,
    )
    emb, meta = load_embeddings(out)
    print(f"{meta['model']} x {meta['task']}: {emb.shape[0]} x {emb.shape[1]} float32 ({meta['seconds']} s on {meta['device']}) -> {out}")
    return 0


def _optimize(args: argparse.Namespace) -> int:
    import json

    from .experiment import run

    parquet, meta = run(
        args.task,
        args.model,
        args.seed,
        steps=args.steps,
        data_dir=args.data_dir,
        task_path=args.task_dir,
        embeddings_path=args.embeddings,
        out=args.out,
        results=args.results,
        device=args.device,
        progress=None if not args.quiet else False,
        lr=args.lr,
        sample_cap=args.sample_cap,
        extra_every=args.extra_every,
    )
    info = json.loads(meta.read_text())
    print(f"{info['settings']['task']} x {args.model} seed {args.seed}: {info['settings']['steps']} updates in "
          f"{info['loop_seconds']:.1f} s ({info['seconds_per_update'] * 1000:.0f} ms/update on {info['device']}) -> {parquet}")
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from .experiment.analysis import analyze

    written = analyze(args.results, args.out)
    print(f"wrote {len(written)} files under {args.out or args.results}: " + ", ".join(sorted({p.parent.name for p in written})))
    return 0


def _aggregate(args: argparse.Namespace) -> int:
    from .experiment.analysis import aggregate

    written = aggregate(args.results, args.out)
    print(f"aggregated the complete runs under {args.results} -> {written[0].parent}")
    return 0


def _tables(args: argparse.Namespace) -> int:
    from .experiment.analysis import load_aggregate, tables

    written = tables(*load_aggregate(args.aggregate), args.out)
    print(f"wrote {len(written)} tables under {args.out}")
    return 0


def _figures(args: argparse.Namespace) -> int:
    from .experiment.analysis import figures, load_aggregate

    written = figures(load_aggregate(args.aggregate)[0], args.out)
    print(f"wrote {len(written)} figures under {args.out}")
    return 0


def _sources(args: argparse.Namespace) -> int:
    from .sources import sources_markdown

    print(sources_markdown())
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="isoflow", description="Geometry of embedding spaces under classification training.")
    parser.add_argument("--version", action="version", version=f"isoflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("geometry", help="isotropy, silhouette and intrinsic-dimension metrics of an embedding matrix")
    g.add_argument("embeddings", help="(n_points, dim) matrix: .npy, .npz, .parquet or .pt")
    g.add_argument("--key", help="entry of an .npz/.pt dict or parquet column holding the matrix")
    g.add_argument("--labels", help="class labels, one per row (.npy/.npz/.parquet/.pt/.txt/.csv), or a 2-d multi-label 0/1 matrix")
    g.add_argument("--labels-key", help="entry/column of the labels file")
    g.add_argument("--types", help="type id per row (e.g. the word of each contextual embedding), for S_inter/S_intra")
    g.add_argument("--types-key", help="entry/column of the types file")
    g.add_argument("--metrics", help="comma-separated subset of metrics (default: all the inputs allow)")
    g.add_argument("--sample", type=int, default=20_000, help="compute on a seeded sample of this many rows when larger (0: all rows; default 20000)")
    g.add_argument("--seed", type=int, default=0, help="seed of the row sample and of k-means")
    g.add_argument("--k-lid", type=int, default=20, help="neighbours for LID (default 20)")
    g.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    g.add_argument("--format", choices=("table", "json"), default="table")
    g.set_defaults(func=_geometry)

    def data_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", default="data", help="root of tasks/, embeddings/ and the raw-file cache raw/ (default: data)")
        p.add_argument("--mirror", default=None, help="mirror directory (or several, ':'-separated) holding the raw files; default $ISOFLOW_MIRROR")
        p.add_argument("--out", default=None, help="output directory (default under --data-dir)")
        p.add_argument("--raw-dir", default=None, help="cache of downloaded/mirrored raw files and models (default <data-dir>/raw)")
        p.add_argument("--quiet", action="store_true", help="no progress bars")

    p = sub.add_parser("prepare", help="fetch a dataset (cache, mirror, canonical URL), verify it and write its canonical tables")
    p.add_argument("dataset", help="polarity, snli, glue/<task> (cola sst2 mrpc qqp mnli qnli rte wnli), pos, pos-wordnet, supersense")
    data_options(p)
    p.add_argument("--vocab", default="glove-50d", help="word tasks: static vectors whose vocabulary (frequency order) gives the words (default glove-50d; the paper: word2vec-222)")
    p.add_argument("--n-words", type=int, default=None, help="word tasks: how many words (default: the paper's 11,462 for pos-wordnet, 2,275 for supersense)")
    p.add_argument("--wordlist", default=None, help="supersense: a file with one noun per line (e.g. Tikhonov et al.'s list) instead of the vocabulary's first nouns")
    p.add_argument("--source-file", default=None, help="pos: a local CoDWoE complete file (.json or .csv) instead of fetching it")
    p.add_argument("--wordnet-dir", default=None, help="WordNet 3.0 database directory (default: $ISOFLOW_WORDNET, /usr/share/wordnet, or NLTK's wordnet.zip)")
    p.add_argument("--offline", action="store_true", help="never download: use only the cache and the mirror")
    p.set_defaults(func=_prepare)

    e = sub.add_parser("encode", help="embed the items of a prepared task (float32 .npy + index), cached by (model, items)")
    e.add_argument("--model", required=True, help="minilm, mpnet, distilroberta (SBERT) or glove-50d, word2vec-222 (static)")
    e.add_argument("--dataset", required=True, help="a prepared task, e.g. polarity or glue/sst2")
    data_options(e)
    e.add_argument("--task-dir", default=None, help="the prepared task directory (default <data-dir>/tasks/<dataset>)")
    e.add_argument("--batch-size", type=int, default=64)
    e.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    e.add_argument("--force", action="store_true", help="encode again even if a matching table exists")
    e.set_defaults(func=_encode)

    o = sub.add_parser("optimize", help="train embeddings + a linear classifier, recording silhouette and IsoScore after every update")
    o.add_argument("--task", required=True, help="a prepared task, e.g. polarity, snli, glue/cola, supersense")
    o.add_argument("--model", required=True, help="the model whose embeddings are optimised (see `isoflow encode`)")
    o.add_argument("--seed", type=int, default=0, help="seeds the classifier's initialisation and the per-update samples")
    o.add_argument("--steps", type=int, default=None, help="number of updates (default: 1000; GLUE tasks 250, as in the paper)")
    o.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    o.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    o.add_argument("--sample-cap", type=int, default=20_000, help="measure sets larger than this on a fresh random sample of this size per update (default 20000)")
    o.add_argument("--extra-every", type=int, default=0, help="also record cosine anisotropy, LID and TwoNN of the table every K updates (default 0: never)")
    o.add_argument("--data-dir", default="data", help="where the prepared tasks and embeddings are (default: data)")
    o.add_argument("--task-dir", default=None, help="the prepared task directory (default <data-dir>/tasks/<task>)")
    o.add_argument("--embeddings", default=None, help="the embeddings directory (default <data-dir>/embeddings/<model>/<task>)")
    o.add_argument("--results", default="results", help="results root (default: results)")
    o.add_argument("--out", default=None, help="output path without suffix (default results/trajectories/<task>/<model>/seed<S>)")
    o.add_argument("--quiet", action="store_true", help="no progress bar")
    o.set_defaults(func=_optimize)

    a = sub.add_parser("analyze", help="aggregate, tables and figures in one go (= aggregate + tables + figures)")
    a.add_argument("--results", default="results", help="results root holding trajectories/ (default: results)")
    a.add_argument("--out", default=None, help="where aggregate/, tables/ and figures/ go (default: the results root)")
    a.set_defaults(func=_analyze)

    g = sub.add_parser("aggregate", help="every complete trajectory in one table: <out>/trajectories.parquet + runs.csv")
    g.add_argument("--results", default="results", help="results root holding trajectories/ (default: results)")
    g.add_argument("--out", default=None, help="output directory (default <results>/aggregate)")
    g.set_defaults(func=_aggregate)

    for name, func, what in (("tables", _tables, "correlation tables and Tables 1-2 (CSV, Markdown, LaTeX)"),
                             ("figures", _figures, "silhouette and IsoScore across training and against each other (PNG, PDF)")):
        f = sub.add_parser(name, help=f"{what} from an aggregate")
        f.add_argument("--aggregate", default="results/aggregate", help="the output of `isoflow aggregate` (default: results/aggregate)")
        f.add_argument("--out", default=f"results/{name}", help=f"output directory (default: results/{name})")
        f.set_defaults(func=func)

    s = sub.add_parser("sources", help="list every dataset and model source: canonical location, sha256, license (Markdown)")
    s.set_defaults(func=_sources)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:  # bad input, missing data, offline: one clear line
        print(f"isoflow {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
