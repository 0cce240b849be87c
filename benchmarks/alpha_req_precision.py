"""Measurement, not a timing: how much a layer's α-ReQ (fitted over the covariance's whole numerical rank) depends on
the precision its products are taken in. A LayerNorm's output lacks a direction (its coordinates' mean is 0); the
layer analysis' in-memory spectrum takes float32 products of float32 states (added up in float64), whose rounding
can give that direction an eigenvalue above the float64 rank tolerance, which the fit then counts; the same states
in float64 (and the streamed sums of ``states: sample``) do not.

For each ``--model``, on ``--tokens`` Brown tokens (the layer analysis' seeded sentence sample): per state, α-ReQ and
Li et al.'s α (ranks 12-100) on the float32 states and on their float64 copy, and the smallest eigenvalue each counts,
as a share of the largest. Writes ``benchmarks/results/alpha-req-precision.json`` with the machine and the commit.

    python benchmarks/alpha_req_precision.py --model minilm --tokens 5000 --mirror ../shared/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).parent / "results" / "alpha-req-precision.json"


def smallest_counted(x: torch.Tensor) -> float:
    """The smallest eigenvalue the spectrum counts (above its rank tolerance), as a share of the largest."""
    from isoflow.metrics.spectrum import _eigenvalues

    ev = _eigenvalues(x, centred=True)
    return float(ev[ev > 0][-1] / ev[0])


def measure(model: str, args) -> list[dict]:
    from isoflow import corpora
    from isoflow.datasets import raw_cache
    from isoflow.layers.encoder import batches, count_points, load_encoder
    from isoflow.metrics import alpha_req
    from isoflow.models.resolve import resolve_model

    cache = raw_cache(args.data_dir, None)
    encoder = load_encoder(resolve_model(model, cache=cache, mirror=args.mirror), "cpu")
    sentences = corpora.load("brown", cache, args.mirror)
    chosen = corpora.sample(sentences, args.tokens, 0, lambda words: count_points(encoder, words))
    states = [np.concatenate(layer) for layer in zip(*(b.layers for b in batches(encoder, chosen)))]
    rows = []
    for layer, x32 in enumerate(states):
        x32 = torch.from_numpy(x32)
        x64 = x32.to(torch.float64)
        rows.append(
            {
                "model": model,
                "layer": layer,
                "n_points": int(x32.shape[0]),
                "dim": int(x32.shape[1]),
                "alpha_req_float32": alpha_req(x32),
                "alpha_req_float64": alpha_req(x64),
                "alpha_req_li_float32": alpha_req(x32, first=12, last=100, weighted=True),
                "alpha_req_li_float64": alpha_req(x64, first=12, last=100, weighted=True),
                "smallest_counted_float32": smallest_counted(x32),
                "smallest_counted_float64": smallest_counted(x64),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> int:
    from isoflow.provenance import code_version
    from isoflow.records import machine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=None, help="a model the layer analysis reads (repeat)")
    parser.add_argument("--tokens", type=int, default=5000)
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--mirror", default=None, help="a local copy of the corpora (../shared/data)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = [row for model in args.model or ["minilm"] for row in measure(model, args)]
    result = {
        "what": __doc__.splitlines()[0],
        "tokens": args.tokens,
        "machine": machine(),
        "threads": torch.get_num_threads(),
        "code": code_version(),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
