"""``isoflow layers``: Cai et al.'s measurements on every layer of a model over a corpus."""

from __future__ import annotations

import argparse
import json

from .. import settings as declared
from . import options

HELP = "Cai et al. across layers: per layer S_inter, S_intra, IsoScore, clusters, cluster-centred isotropy, LID, TwoNN"


def add_parser(sub) -> None:
    from ..layers import TYPE_MODES
    from ..layers.settings import BATCH_SIZE, LayerSettings

    y = sub.add_parser("layers", help=HELP)
    options.model(y, extra="; encoders and decoder-only models such as GPT-2")
    options.device_map(y)
    options.corpus(y)
    y.add_argument(
        "--types",
        choices=TYPE_MODES,
        default="tokens",
        help="a point per word piece, typed by its token string (default); per word (mean of its pieces); or per "
        "sentence, its last piece (last-token: Li et al.'s points; --max-tokens then counts sentences)",
    )
    declared.add_arguments(y, LayerSettings)
    y.add_argument(
        "--view-layer",
        type=options.int_at_least(0),
        default=None,
        help="layer of the PCA view (default: the middle one measured)",
    )
    y.add_argument(
        "--layers",
        default=None,
        metavar="SPEC",
        help="measure only these states (0 = embeddings, -1 = the last; indices and slices, e.g. 0,6,12 or ::4,-1: "
        "every fourth and the last); only they are stored (default: every layer)",
    )
    y.add_argument(
        "--estimate",
        action="store_true",
        help="print the run's predicted seconds, peak memory and disk on this machine (JSON) instead of making it: "
        "its positions counted, a few of its batches encoded, the measuring's kernels timed (a few minutes)",
    )
    options.layer_run(y, "results/layers/runs/<model>/<corpus>", BATCH_SIZE)
    y.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..layers.run import run_layers  # the module itself: DVC's stage deps follow imports
    from ..layers.settings import LayerSettings

    settings = declared.from_namespace(LayerSettings, args)
    # what a run and its estimate both read: the model, the corpus, the settings and where things are
    given = dict(settings=settings, types=args.types, layers=args.layers, device=args.device, mirror=args.mirror,
                 batch_size=args.batch_size, data_dir=args.data_dir, raw_dir=args.raw_dir)  # fmt: skip
    if args.estimate:
        return estimate(args, given)
    out = run_layers(
        options.model_spec(args),
        args.corpus,
        **given,
        corpus_name=args.corpus_name,
        view_layer=args.view_layer,
        out=args.out,
        results=args.results,
        force=args.force,
        progress=None if not args.quiet else False,
    )
    meta = json.loads((out / "meta.json").read_text())
    print(
        f"{meta['model']} x {meta['corpus']}: {meta['n_points']} points, {meta['n_layers']} layer(s), "
        f"{sum(meta['seconds'].values()):.0f} s, peak {meta['peak_rss_mb']:.0f} MB -> {out}"
    )
    return 0


def estimate(args: argparse.Namespace, given: dict) -> int:
    """``--estimate``: the run's prediction (isoflow.layers.estimate) as JSON on stdout, a summary on stderr."""
    import sys

    from ..layers.estimate import estimate_layers

    made = estimate_layers(options.model_spec(args), args.corpus, **given, progress=not args.quiet)
    p, available = made["predicted"], made["available_memory_mb"]
    fits = ""  # the memory available now, where the machine says
    if available is not None:
        fits = f" of {available:,.0f} MiB available" + (": it would not fit" if p["peak_memory_mb"] > available else "")
    print(
        f"{made['model']} x {made['corpus']}: encoding {p['encode'] / 60:.1f} min, measuring {made['states_measured']} "
        f"state(s) {p['measure'] / 60:.1f} min, total {p['total'] / 60:.1f} min; peak {p['peak_memory_mb']:,.0f} MiB"
        f"{fits}, disk {p['disk_mb']:,.0f} MiB (estimated in {made['estimate_seconds']:.0f} s)",
        file=sys.stderr,
    )
    print(json.dumps(made, indent=1))
    return 0
