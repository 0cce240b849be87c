"""The ``isoflow`` command line: thin wrappers over the library (the science lives in the modules)."""

from __future__ import annotations

import argparse
import errno
import json
import math
import sys


def _number(text: str, cast=float) -> float:
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'an integer' if cast is int else 'a number'}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number; got {text}")
    return value


def _int_at_least(low: int, what: str = ""):
    """argparse type: an integer >= ``low`` (a clear message names the option and the range)."""
    def parse(text: str) -> int:
        value = _number(text, int)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}{what}; got {value}")
        return value
    return parse


def _finite_float(text: str) -> float:
    return _number(text)


def _unit_interval(text: str) -> float:
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1]; got {text}")
    return value


def _positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0; got {text}")
    return value


def _geometry(args: argparse.Namespace) -> int:
    import torch

    from .arrays import load_array, load_matrix
    from .devices import resolve_device
    from .metrics import METRIC_NAMES, METRIC_NEEDS, MetricInputError, geometry

    device = resolve_device(args.device)
    metrics = None if args.metrics is None else [m.strip() for m in args.metrics.split(",") if m.strip()]
    if metrics is not None and not metrics:
        raise ValueError(f"--metrics is empty; choose from {', '.join(METRIC_NAMES)}")
    for name in metrics or ():
        needs = METRIC_NEEDS.get(name)
        if needs is not None and getattr(args, needs) is None:
            raise ValueError(f"metric {name!r} needs --{needs} (a file with one {needs[:-1]} per row)")
    X = torch.from_numpy(load_matrix(args.embeddings, args.key)).to(device)
    labels = None if args.labels is None else load_array(args.labels, args.labels_key, preferred=("label", "labels", "y"), option="--labels-key")
    types = None if args.types is None else load_array(args.types, args.types_key, preferred=("type", "types", "word"), option="--types-key")
    try:
        result = geometry(X, labels, types, metrics=metrics, sample=args.sample or None, seed=args.seed, k_lid=args.k_lid)
    except MetricInputError as exc:
        hint = " (or lower --k-lid)" if "lid_mle" in exc.metrics else ""
        others = [m for m in (metrics or METRIC_NAMES) if m not in exc.metrics and (METRIC_NEEDS[m] is None or getattr(args, METRIC_NEEDS[m]) is not None)]
        fix = f"leave {'them' if len(exc.metrics) > 1 else 'it'} out{hint}: --metrics {','.join(others)}" if others else "give more points"
        raise ValueError(f"{args.embeddings}: {exc}. To compute the others, {fix}") from exc
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
        force=args.force,
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


def _seed_list(text: str) -> list[int]:
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, e.g. 0,1,2; got {text!r}") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"expected distinct non-negative integers, e.g. 0,1,2; got {text!r}")
    return seeds


def _optimize(args: argparse.Namespace) -> int:
    import json

    from .experiment import run_seeds

    seeds = args.seeds or [0 if args.seed is None else args.seed]
    written = run_seeds(
        args.task,
        args.model,
        seeds,
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
        label_centred_every=args.label_centred_every,
        istar_lambda=args.istar,
        zeta=args.zeta,
        shrinkage=args.istar_shrinkage,
        keep_diverged=args.keep_diverged,
    )
    for seed, (parquet, meta) in zip(seeds, written):
        info = json.loads(meta.read_text())
        lam = f" lambda {args.istar:g}" if args.istar else ""
        status = f"diverged at step {info['diverged_at_step']}" if info.get("diverged") else f"{info['settings']['steps']} updates"
        print(f"{info['settings']['task']} x {args.model}{lam} seed {seed}: {status} in "
              f"{info['loop_seconds']:.1f} s ({info['seconds_per_update'] * 1000:.0f} ms/update on {info['device']}) -> {parquet}")
    return 0


def _run_list(args: argparse.Namespace) -> list[str] | None:
    """The runs named on the command line (paths, and the lines of --manifest files), or None: discover them."""
    runs = list(args.runs)
    for manifest in args.manifest or ():
        try:
            text = open(manifest, encoding="utf-8").read()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{manifest}: not UTF-8 text ({exc.reason}); a manifest lists one run record path per line") from exc
        runs += [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return runs or None


def _analyze(args: argparse.Namespace) -> int:
    from .experiment.analysis import analyze

    written = analyze(args.results, args.out, runs=_run_list(args))
    print(f"wrote {len(written)} files under {args.out or args.results}: " + ", ".join(sorted({p.parent.name for p in written})))
    return 0


def _aggregate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .experiment.records import aggregate, discover

    runs = _run_list(args)
    out = args.out or str(Path(args.results) / "aggregate")
    written = aggregate(discover(args.results) if runs is None else runs, out)
    print(f"aggregated {'the complete runs under ' + args.results if runs is None else f'{len(runs)} runs'} -> {written[0].parent}")
    return 0


def _tables(args: argparse.Namespace) -> int:
    from .experiment.analysis import tables
    from .experiment.records import load_aggregate

    written = tables(*load_aggregate(args.aggregate), args.out)
    print(f"wrote {len(written)} tables under {args.out}")
    return 0


def _figures(args: argparse.Namespace) -> int:
    from .experiment.analysis import figures
    from .experiment.records import load_aggregate

    written = figures(load_aggregate(args.aggregate)[0], args.out)
    print(f"wrote {len(written)} figures under {args.out}")
    return 0


def _istar_report(args: argparse.Namespace) -> int:
    from .experiment import istar_report
    from .experiment.records import load_aggregate

    traj, info = load_aggregate(args.aggregate)
    written = istar_report.tables(traj, info, args.tables) + istar_report.figures(traj, info, args.figures)
    print(f"wrote {len(written)} files: the I-STAR table under {args.tables}, its figures under {args.figures}")
    return 0


def _layers(args: argparse.Namespace) -> int:
    import json

    from .layers import LayerSettings, run_layers

    settings = LayerSettings(sample_cap=args.sample_cap, k_max=args.k_max, min_silhouette=args.min_silhouette, k_lid=args.k_lid,
                             max_per_type=args.max_per_type, seed=args.seed)
    out = run_layers(args.model, args.corpus, max_tokens=args.max_tokens, settings=settings, types=args.types, view_layer=args.view_layer,
                     out=args.out, results=args.results, data_dir=args.data_dir, raw_dir=args.raw_dir, mirror=args.mirror,
                     device=args.device, batch_size=args.batch_size, force=args.force, progress=None if not args.quiet else False)
    meta = json.loads((out / "meta.json").read_text())
    print(f"{args.model} x {meta['corpus']}: {meta['n_points']} points, {meta['n_layers']} layer(s), "
          f"{sum(meta['seconds'].values()):.0f} s, peak {meta['peak_rss_mb']:.0f} MB -> {out}")
    return 0


def _layers_report(args: argparse.Namespace) -> int:
    from .layers import report

    layers, views, metas = report.load(args.runs)
    written = report.tables(layers, metas, args.tables) + report.figures(layers, views, args.figures)
    print(f"wrote {len(written)} files: layer tables under {args.tables}, figures under {args.figures}")
    return 0


def _finetune(args: argparse.Namespace) -> int:
    import json

    from .finetune import run_finetune

    parquet, record = run_finetune(
        args.task, args.model, args.seed, data_dir=args.data_dir, task_path=args.task_dir, results=args.results, out=args.out,
        device=args.device, mirror=args.mirror, raw_dir=args.raw_dir, progress=None if not args.quiet else False,
        istar_lambda=args.istar, zeta=args.zeta, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, max_train=args.max_train,
        heldout_fraction=args.heldout_fraction, max_heldout=args.max_heldout, istar_points=args.istar_points)
    info = json.loads(record.read_text())
    status = f"diverged at epoch {info['diverged_at_epoch']}" if info.get("diverged") else f"{args.epochs} epoch(s)"
    print(f"{info['settings']['task']} x {args.model} lambda {args.istar:g} seed {args.seed}: {status}, {info['n_train']} training / "
          f"{info['n_heldout']} held-out examples ({info['held_out']['source']}), "
          f"{info['train_sentences_per_second'] or 0:.0f} sentences/s training -> {parquet}")
    return 0


def _finetune_report(args: argparse.Namespace) -> int:
    from .finetune.report import report

    written = report(args.runs, args.tables, args.figures)
    print(f"wrote {len(written)} files: finetune tables under {args.tables}, figures under {args.figures}")
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
    g.add_argument("--sample", type=_int_at_least(0, " (0: all rows)"), default=20_000, help="compute on a seeded sample of this many rows when larger (0: all rows; default 20000)")
    g.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the row sample and of k-means")
    g.add_argument("--k-lid", type=_int_at_least(2), default=20, help="neighbours for LID (default 20; at most the number of points - 1)")
    g.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    g.add_argument("--format", choices=("table", "json"), default="table")
    g.set_defaults(func=_geometry)

    def data_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data-dir", default="data", help="root of tasks/, embeddings/ and the raw-file cache raw/ (default: data)")
        p.add_argument("--mirror", default=None, help="mirror directory (or several, ':'-separated) holding the raw files; default $ISOFLOW_MIRROR")
        p.add_argument("--out", default=None, help="output directory (default under --data-dir)")
        p.add_argument("--raw-dir", default=None, help="cache of downloaded/mirrored raw files and models (default <data-dir>/raw)")
        p.add_argument("--quiet", action="store_true", help="no progress output (a bar on a terminal, a line per tenth of the work in a log)")

    p = sub.add_parser("prepare", help="fetch a dataset (cache, mirror, canonical URL), verify it and write its canonical tables")
    p.add_argument("dataset", help="polarity, snli, glue/<task> (cola sst2 mrpc qqp mnli qnli rte wnli), pos, pos-wordnet, supersense")
    data_options(p)
    p.add_argument("--vocab", default="glove-50d", help="word tasks: static vectors whose vocabulary (frequency order) gives the words (default glove-50d; the paper: word2vec-222)")
    p.add_argument("--force", action="store_true", help="replace what stands at --out even if isoflow did not write it")
    p.add_argument("--n-words", type=_int_at_least(2), default=None, help="word tasks: how many words (default: the paper's 11,462 for pos-wordnet, 2,275 for supersense)")
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
    e.add_argument("--batch-size", type=_int_at_least(1), default=64)
    e.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    e.add_argument("--force", action="store_true", help="encode again even if a matching table exists, replacing what stands at --out")
    e.set_defaults(func=_encode)

    o = sub.add_parser("optimize", help="train embeddings + a linear classifier, recording silhouette and IsoScore after every update")
    o.add_argument("--task", required=True, help="a prepared task, e.g. polarity, snli, glue/cola, supersense")
    o.add_argument("--model", required=True, help="the model whose embeddings are optimised (see `isoflow encode`)")
    seed = o.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=_int_at_least(0), default=None, help="seeds the classifier's initialisation and the per-update samples (default 0)")
    seed.add_argument("--seeds", type=_seed_list, default=None, metavar="S,S,...",
                      help="several seeds in this one process (records identical to separate runs); --out then needs {seed}")
    o.add_argument("--steps", type=_int_at_least(1), default=None, help="number of updates (default: 1000; GLUE tasks 250, as in the paper)")
    o.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    o.add_argument("--lr", type=_positive_float, default=1e-3, help="Adam learning rate (default 1e-3)")
    o.add_argument("--sample-cap", type=_int_at_least(2), default=20_000, help="measure sets larger than this on a fresh random sample of this size per update (default 20000)")
    o.add_argument("--extra-every", type=_int_at_least(0, " (0: never)"), default=0, help="also record cosine anisotropy, LID and TwoNN of the table every K updates (default 0: never)")
    o.add_argument("--label-centred-every", type=_int_at_least(0, " (0: never)"), default=0, metavar="K",
                   help="every K updates also record IsoScore after removing each label cluster's mean, and S_intra within classes")
    o.add_argument("--istar", type=_finite_float, default=0.0, metavar="LAMBDA",
                   help="I-STAR: add LAMBDA * (1 - IsoScore*) to the loss; > 0 pushes isotropy up, < 0 down (default 0: plain run)")
    o.add_argument("--zeta", type=_unit_interval, default=0.2, help="IsoScore* shrinkage weight in [0, 1] (default 0.2, I-STAR's)")
    o.add_argument("--istar-shrinkage", choices=("pretrained", "isotropic"), default="pretrained",
                   help="IsoScore*'s shrinkage target: the pretrained table's covariance (default) or its isotropic counterpart")
    o.add_argument("--keep-diverged", action="store_true", help="if the run diverges (NaN), write a record saying so instead of nothing (sweeps)")
    o.add_argument("--data-dir", default="data", help="where the prepared tasks and embeddings are (default: data)")
    o.add_argument("--task-dir", default=None, help="the prepared task directory (default <data-dir>/tasks/<task>)")
    o.add_argument("--embeddings", default=None, help="the embeddings directory (default <data-dir>/embeddings/<model>/<task>)")
    o.add_argument("--results", default="results", help="results root (default: results)")
    o.add_argument("--out", default=None, help="output path without suffix (default results/trajectories/<task>/<model>/[istar<LAMBDA>/]seed<S>)")
    o.add_argument("--quiet", action="store_true", help="no progress output (a bar on a terminal, a line per tenth of the run in a log)")
    o.set_defaults(func=_optimize)

    def run_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("runs", nargs="*", help="run records (<stem>.json or .parquet) to use; default: every complete run under --results")
        p.add_argument("--manifest", action="append", help="a file listing run records, one per line (repeatable)")
        p.add_argument("--results", default="results", help="results root holding trajectories/ (default: results)")

    a = sub.add_parser("analyze", help="aggregate, tables and figures in one go (= aggregate + tables + figures)")
    run_options(a)
    a.add_argument("--out", default=None, help="where aggregate/, tables/ and figures/ go (default: the results root)")
    a.set_defaults(func=_analyze)

    g = sub.add_parser("aggregate", help="runs in one table: <out>/trajectories.parquet + runs.csv (runs differing in more than the seed are refused)")
    run_options(g)
    g.add_argument("--out", default=None, help="output directory (default <results>/aggregate)")
    g.set_defaults(func=_aggregate)

    for name, func, what in (("tables", _tables, "correlation tables and Tables 1-2 (CSV, Markdown, LaTeX)"),
                             ("figures", _figures, "silhouette and IsoScore across training and against each other (PNG, PDF)")):
        f = sub.add_parser(name, help=f"{what} from an aggregate")
        f.add_argument("--aggregate", default="results/aggregate", help="the output of `isoflow aggregate` (default: results/aggregate)")
        f.add_argument("--out", default=f"results/{name}", help=f"output directory (default: results/{name})")
        f.set_defaults(func=func)

    def report_outputs(p: argparse.ArgumentParser, name: str) -> None:
        p.add_argument("--tables", default="results/tables", help=f"where the {name} tables go (default: results/tables)")
        p.add_argument("--figures", default="results/figures", help=f"where the {name}_* figures go (default: results/figures)")

    r = sub.add_parser("istar-report", help="the I-STAR sweep's table (istar.csv/md/tex) and figures, from an aggregate of its runs")
    r.add_argument("--aggregate", default="results/aggregate/istar", help="the output of `isoflow aggregate` over the sweep's runs")
    report_outputs(r, "istar")
    r.set_defaults(func=_istar_report)

    y = sub.add_parser("layers", help="Cai et al. across layers: per layer S_inter, S_intra, IsoScore, clusters, cluster-centred isotropy, LID, TwoNN")
    y.add_argument("--model", required=True, help="minilm, mpnet, a hub model id (bert-base-uncased, gpt2, ...; needs the hub) or static vectors (glove-50d, word2vec-222)")
    y.add_argument("--corpus", required=True, help="brown, wikitext-2, or a plain UTF-8 text file (one sentence per line)")
    y.add_argument("--max-tokens", type=_int_at_least(1), default=100_000, help="points to analyse: whole sentences in a seeded order until this many tokens (default 100000)")
    y.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the sentence order, the samples and k-means (default 0)")
    y.add_argument("--types", choices=("tokens", "words"), default="tokens", help="a point per word piece, typed by its token string (default), or per word (mean of its pieces)")
    y.add_argument("--k-lid", type=_int_at_least(2), default=100, help="neighbours for LID (default 100, as Cai et al.)")
    y.add_argument("--k-max", type=_int_at_least(2), default=15, help="K-means tries K = 2..K_MAX (default 15)")
    y.add_argument("--min-silhouette", type=_unit_interval, default=0.1, help="below this best silhouette the layer is one cluster (default 0.1)")
    y.add_argument("--sample-cap", type=_int_at_least(3), default=20_000, help="points for K-means, LID and TwoNN (default 20000)")
    y.add_argument("--max-per-type", type=_int_at_least(2), default=1000, help="instances per type for S_intra (default 1000)")
    y.add_argument("--view-layer", type=_int_at_least(0), default=None, help="layer of the PCA view (default: the middle one)")
    y.add_argument("--batch-size", type=_int_at_least(1), default=32)
    y.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    y.add_argument("--results", default="results", help="results root (default: results; output results/layers/<model>/<corpus>)")
    y.add_argument("--force", action="store_true", help="replace what stands at --out even if isoflow did not write it")
    data_options(y)
    y.set_defaults(func=_layers)

    z = sub.add_parser("layers-report", help="tables (layers, layers_lid) and figures over layer analyses")
    z.add_argument("runs", nargs="+", help="output directories of `isoflow layers`")
    report_outputs(z, "layers")
    z.set_defaults(func=_layers_report)

    f = sub.add_parser("finetune", help="fine-tune a sentence encoder (+ linear head) with the I-STAR penalty, measured on held-out data")
    f.add_argument("--task", required=True, help="a prepared single-label task, e.g. polarity, glue/sst2, glue/mrpc")
    f.add_argument("--model", required=True, help="minilm or mpnet (or distilroberta where the hub is reachable)")
    f.add_argument("--istar", type=_finite_float, default=0.0, metavar="LAMBDA", help="I-STAR weight: > 0 pushes isotropy up, < 0 down (default 0)")
    f.add_argument("--zeta", type=_unit_interval, default=0.2, help="IsoScore* shrinkage weight (default 0.2)")
    f.add_argument("--istar-points", choices=("pooled", "tokens"), default="pooled",
                   help="the penalty's points: the batch's sentence embeddings (default) or token states of every layer but the first")
    f.add_argument("--seed", type=_int_at_least(0), default=0)
    f.add_argument("--epochs", type=_int_at_least(1), default=1)
    f.add_argument("--batch-size", type=_int_at_least(2), default=32)
    f.add_argument("--lr", type=_positive_float, default=2e-5, help="AdamW learning rate (default 2e-5)")
    f.add_argument("--max-train", type=_int_at_least(0), default=0, help="train on a seeded stratified subset of this many examples (0: all)")
    f.add_argument("--heldout-fraction", type=_unit_interval, default=0.1, help="held out from the training data when no validation split is at hand (default 0.1)")
    f.add_argument("--max-heldout", type=_int_at_least(0), default=0, help="evaluate on at most this many held-out examples (0: all)")
    f.add_argument("--task-dir", default=None, help="the prepared task directory (default <data-dir>/tasks/<task>)")
    f.add_argument("--results", default="results", help="results root (default: results)")
    f.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    data_options(f)
    f.set_defaults(func=_finetune)

    fr = sub.add_parser("finetune-report", help="the fine-tuning sweep's table (finetune.csv/md/tex) and figures")
    fr.add_argument("runs", nargs="+", help="run records (<stem>.json) of `isoflow finetune`")
    report_outputs(fr, "finetune")
    fr.set_defaults(func=_finetune_report)

    s = sub.add_parser("sources", help="list every dataset and model source: canonical location, sha256, license (Markdown)")
    s.set_defaults(func=_sources)
    return parser


def _os_message(exc: OSError) -> str:
    """One line for a filesystem error: what, where, and the likely fix."""
    if type(exc) in (FileExistsError, FileNotFoundError) and exc.args and exc.filename is None:
        return str(exc)  # isoflow's own messages already name the file and the fix
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    what = exc.strerror or str(exc)
    hint = {
        "PermissionError": "check the permissions, or write elsewhere (--out / --data-dir / --results)",
        "NotADirectoryError": "a path that should be a directory (or lead to one) is a file; point the option elsewhere",
        "IsADirectoryError": "a path that should be a file is a directory; point the option elsewhere",
    }.get(type(exc).__name__, "")
    if getattr(exc, "errno", None) == errno.EROFS:
        hint = "the filesystem is read-only; write elsewhere (--out / --data-dir / --results)"
    message = f"{what}: {where}" if where else what
    return f"{message} ({hint})" if hint else message


def main(argv: list[str] | None = None) -> int:
    from . import interrupt

    interrupt.install()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt as exc:  # outputs are renamed into place only when complete: nothing partial is left
        what = "terminated" if isinstance(exc, interrupt.Terminated) else "interrupted"
        print(f"isoflow {args.command}: {what}; nothing was written (outputs appear only once complete)", file=sys.stderr)
        return interrupt.exit_code(exc)
    except (ValueError, RuntimeError) as exc:  # bad input, missing data, offline: one clear line
        print(f"isoflow {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # missing, unreadable or unwritable paths
        print(f"isoflow {args.command}: error: {_os_message(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
