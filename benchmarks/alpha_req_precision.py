"""Measurement, not a timing: how much a layer's α-ReQ (fitted over the covariance's whole numerical rank) depends on
the precision its products are taken in. A LayerNorm's output lacks a direction (its coordinates' mean is 0); float32
products of float32 states (added up in float64, 1,024 rows at a time: the layer analysis' in-memory spectrum until
isoflow.metrics.spectrum took them in float64) can give that direction an eigenvalue above the float64 rank
tolerance, which the fit then counts; float64 products (the library's now, and the streamed sums of ``states:
sample``) do not.

For each ``--model``, on ``--tokens`` Brown tokens (the layer analysis' seeded sentence sample): per state, α-ReQ and
Li et al.'s α (ranks 12-100) from float32 products (``*_float32``) and from float64 products (``*_float64``:
isoflow.metrics.alpha_req), and the smallest eigenvalue each counts, as a share of the largest. Writes
``benchmarks/results/alpha-req-precision.json`` with the machine and the commit.

    python benchmarks/alpha_req_precision.py --model minilm --tokens 5000 --mirror ../shared/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).parent / "results" / "alpha-req-precision.json"


def float32_products(x32: torch.Tensor) -> torch.Tensor:
    """The covariance's eigenvalues of float32 points from float32 products (centred in float32, multiplied 1,024 rows
    at a time, the products added in float64: isoflow.metrics.isotropy._scatter_matrix), at the library's rank
    tolerance."""
    from isoflow.metrics.isotropy import _centred_rescaled, _scatter_matrix
    from isoflow.metrics.spectrum import descending_eigenvalues

    return descending_eigenvalues(_scatter_matrix(_centred_rescaled(x32)[0]), max(x32.shape))


def smallest_counted(ev: torch.Tensor) -> float:
    """The smallest eigenvalue a spectrum counts (above its rank tolerance), as a share of the largest."""
    return float(ev[ev > 0][-1] / ev[0])


def measure(model: str, args) -> list[dict]:
    from isoflow import corpora
    from isoflow.datasets import raw_cache
    from isoflow.layers.encoder import batches, count_points, load_encoder
    from isoflow.metrics.spectrum import _alpha_of, _eigenvalues
    from isoflow.models.resolve import resolve_model

    cache = raw_cache(args.data_dir, None)
    encoder = load_encoder(resolve_model(model, cache=cache, mirror=args.mirror), "cpu")
    sentences = corpora.load("brown", cache, args.mirror)
    chosen = corpora.sample(sentences, args.tokens, 0, lambda words: count_points(encoder, words))
    states = [np.concatenate(layer) for layer in zip(*(b.layers for b in batches(encoder, chosen)))]
    rows = []
    for layer, x32 in enumerate(states):
        x32 = torch.from_numpy(x32)
        f32, f64 = float32_products(x32), _eigenvalues(x32, centred=True)
        rows.append(
            {
                "model": model,
                "layer": layer,
                "n_points": int(x32.shape[0]),
                "dim": int(x32.shape[1]),
                "alpha_req_float32": _alpha_of(f32),
                "alpha_req_float64": _alpha_of(f64),
                "alpha_req_li_float32": _alpha_of(f32, 12, 100, True),
                "alpha_req_li_float64": _alpha_of(f64, 12, 100, True),
                "smallest_counted_float32": smallest_counted(f32),
                "smallest_counted_float64": smallest_counted(f64),
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
