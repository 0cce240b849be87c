"""Benchmark: the silhouette's two ways of summing distances per cluster, one-hot GEMM vs strips.

Not a test. ``isoflow.metrics.silhouette`` sums each block of distances per cluster with a thin GEMM
(one-hot labels, O(n²k)) up to ``SCATTER_ABOVE_K`` clusters, and above it strips of every row added up by cluster in
one sparse product or ``index_add_`` (O(n²) whatever k; "scatter" in the output).
This times both paths on the same data, over cluster counts and sizes, and checks they agree, so the
threshold is a measured choice. Writes ``benchmarks/results/silhouette_paths.json``.
Run: ``python benchmarks/silhouette_paths.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

import torch

from isoflow.atomic import atomic_file
from isoflow.records import run_provenance

OUT = Path(__file__).parent / "results" / "silhouette_paths.json"
SIZES = [(2_275, 50), (8_000, 384)]  # supersense x GloVe-50d; a GLUE-sized MiniLM table
KS = [2, 16, 64, 128, 256, 821]
TINY_SIZES, TINY_KS = [(300, 16)], [2, 16]  # --tiny: a smoke run of the script, both paths timed


def best_of(fn, reps: int = 3) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="JSON output")
    parser.add_argument("--tiny", action="store_true", help="300 points, 2 and 16 clusters: the script in seconds")
    args = parser.parse_args()
    sizes, ks = (TINY_SIZES, TINY_KS) if args.tiny else (SIZES, KS)
    sil = importlib.import_module("isoflow.metrics.silhouette")  # the module, not the function of that name
    threshold = sil.SCATTER_ABOVE_K
    torch.manual_seed(0)
    rows = []
    try:
        for n, d in sizes:
            X = torch.randn(n, d)
            for k in ks:
                y = torch.randint(0, k, (n,))
                row = {"n": n, "d": d, "k": k}
                for path, forced in (("gemm", 10**9), ("scatter", 0)):
                    sil.SCATTER_ABOVE_K = forced
                    row[f"{path}_seconds"] = best_of(lambda: sil.silhouette(X, y))  # noqa: B023 (called at once)
                    row[f"{path}_value"] = sil.silhouette(X, y)
                row["gemm_over_scatter"] = row["gemm_seconds"] / row["scatter_seconds"]
                row["abs_diff"] = abs(row["gemm_value"] - row["scatter_value"])
                row["chosen"] = "scatter" if k > threshold else "gemm"
                rows.append(row)
                print(
                    f"n={n:>6} d={d:>4} k={k:>4}: gemm {1000 * row['gemm_seconds']:8.1f} ms | scatter "
                    f"{1000 * row['scatter_seconds']:8.1f} ms | gemm/scatter {row['gemm_over_scatter']:.2f} | "
                    f"|diff| {row['abs_diff']:.1e} | chosen: {row['chosen']}"
                )
    finally:
        sil.SCATTER_ABOVE_K = threshold
    provenance = run_provenance()  # the commit and versions that made these numbers
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "scatter_above_k": threshold,
    }
    with atomic_file(args.out) as tmp:
        tmp.write_text(json.dumps({"provenance": provenance, "environment": env, "results": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
