"""``isoflow layers``: Cai et al.'s measurements on every layer of a model over a corpus."""

from __future__ import annotations

import argparse
import json

from . import options

HELP = "Cai et al. across layers: per layer S_inter, S_intra, IsoScore, clusters, cluster-centred isotropy, LID, TwoNN"


def add_parser(sub) -> None:
    y = sub.add_parser("layers", help=HELP)
    options.model(y, extra="; encoders and decoder-only models such as GPT-2")
    y.add_argument("--corpus", required=True, help="brown, wikitext-2, or a plain UTF-8 text file (one sentence per line)")
    y.add_argument("--max-tokens", type=options.int_at_least(1), default=100_000,
                   help="points to analyse: whole sentences in a seeded order until this many tokens (default 100000)")
    y.add_argument("--seed", type=options.int_at_least(0), default=0, help="seed of the sentence order, the samples and k-means (default 0)")
    y.add_argument("--types", choices=("tokens", "words"), default="tokens",
                   help="a point per word piece, typed by its token string (default), or per word (mean of its pieces)")
    y.add_argument("--k-lid", type=options.int_at_least(2), default=100, help="neighbours for LID (default 100, as Cai et al.)")
    y.add_argument("--k-max", type=options.int_at_least(2), default=15, help="K-means tries K = 2..K_MAX (default 15)")
    y.add_argument("--min-silhouette", type=options.unit_interval, default=0.1, help="below this best silhouette the layer is one cluster (default 0.1)")
    y.add_argument("--sample-cap", type=options.int_at_least(3), default=20_000, help="points for K-means, LID and TwoNN (default 20000)")
    y.add_argument("--max-per-type", type=options.int_at_least(2), default=1000, help="instances per type for S_intra (default 1000)")
    y.add_argument("--view-layer", type=options.int_at_least(0), default=None, help="layer of the PCA view (default: the middle one)")
    y.add_argument("--batch-size", type=options.int_at_least(1), default=32)
    options.device(y)
    options.results(y, "; output results/layers/runs/<model>/<corpus>")
    options.force(y)
    options.data(y)
    y.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..layers import LayerSettings, run_layers

    settings = LayerSettings(sample_cap=args.sample_cap, k_max=args.k_max, min_silhouette=args.min_silhouette, k_lid=args.k_lid,
                             max_per_type=args.max_per_type, seed=args.seed)
    out = run_layers(args.model, args.corpus, max_tokens=args.max_tokens, settings=settings, types=args.types, view_layer=args.view_layer,
                     out=args.out, results=args.results, data_dir=args.data_dir, raw_dir=args.raw_dir, mirror=args.mirror,
                     device=args.device, batch_size=args.batch_size, force=args.force, progress=None if not args.quiet else False,
                     model_name=args.model_name)
    meta = json.loads((out / "meta.json").read_text())
    print(f"{meta['model']} x {meta['corpus']}: {meta['n_points']} points, {meta['n_layers']} layer(s), "
          f"{sum(meta['seconds'].values()):.0f} s, peak {meta['peak_rss_mb']:.0f} MB -> {out}")
    return 0
