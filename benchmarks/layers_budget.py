"""Benchmark: the budget of a layer analysis, measured before running it — one forward pass of a model over the corpus
sample and the measurements of one (the middle) layer.

Not a test. For each ``--model``: seconds to resolve it (a GGUF model is de-quantised once: the first time only), to
load it, to pick the sentences, to run the forward pass over all of them writing every layer's token states to disk
(as ``isoflow layers`` does), and to measure the middle layer with the section's settings; the estimate of a whole
run is ``encode + states × one layer``. Writes ``benchmarks/results/layers-budget.json`` (the machine, its load, the
versions). Run: ``python benchmarks/layers_budget.py --model smollm2-135m --model gemma3-270m`` (Brown through
``$ISOFLOW_MIRROR`` or ``--mirror``)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).parent / "results" / "layers-budget.json"


def budget(model: str, args) -> dict:
    from layers import tiny_settings  # benchmarks/layers.py: the same tiny case

    from isoflow import corpora
    from isoflow.datasets import raw_cache
    from isoflow.layers import LayerSettings, layer_metrics
    from isoflow.layers.encoder import batches, count_points, load_encoder
    from isoflow.layers.store import LayerStore
    from isoflow.models.resolve import resolve_model

    settings = tiny_settings() if args.tiny else LayerSettings(max_tokens=args.max_tokens)
    cache = raw_cache(args.data_dir, None)
    seconds = {}
    t = time.perf_counter()
    resolved = resolve_model(model, cache=cache, mirror=args.mirror)
    seconds["resolve"] = time.perf_counter() - t
    t = time.perf_counter()
    encoder = load_encoder(resolved, args.device)
    seconds["load"] = time.perf_counter() - t
    sentences = corpora.load(args.corpus, cache, args.mirror)
    t = time.perf_counter()
    chosen = corpora.sample(sentences, settings.max_tokens, settings.seed, lambda w: count_points(encoder, w))
    n_points = sum(count_points(encoder, w) for w in chosen)
    seconds["sample"] = time.perf_counter() - t
    middle = encoder.n_states // 2
    with tempfile.TemporaryDirectory() as tmp, LayerStore(encoder.n_states, n_points, encoder.dim, tmp) as store:
        types, positions = [], []
        t = time.perf_counter()
        for batch in batches(encoder, chosen, batch_size=32):
            store.append(batch.layers)
            types += batch.types
            positions.append(batch.positions)
        seconds["encode"] = time.perf_counter() - t
        t = time.perf_counter()
        points = torch.from_numpy(store.layer(middle))
        layer_metrics(points, np.asarray(types, dtype=object), settings, np.concatenate(positions))
        seconds["one_layer"] = time.perf_counter() - t
    return {
        "model": resolved.name,
        "corpus": args.corpus,
        "points": n_points,
        "states": encoder.n_states,
        "dim": encoder.dim,
        "measured_layer": middle,
        "seconds": seconds,
        "estimated_run_minutes": (seconds["encode"] + encoder.n_states * seconds["one_layer"]) / 60,
        "state_files_gb": encoder.n_states * n_points * encoder.dim * 4 / 1e9,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True, help="repeatable")
    parser.add_argument("--corpus", default="brown")
    parser.add_argument("--max-tokens", type=int, default=100_000)
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--mirror", default=os.environ.get("ISOFLOW_MIRROR"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=OUT)
    from paper_case import add_tiny

    add_tiny(parser)
    args = parser.parse_args()
    from isoflow.records import run_provenance

    load = os.getloadavg()
    rows = []
    for model in args.model:
        rows.append(budget(model, args))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    result = {
        "runs": rows,
        "provenance": run_provenance(),  # the commit and versions that made these numbers
        "environment": {
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average_at_start": load,
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "device": args.device,
        },
    }
    from paper_case import write_result

    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
