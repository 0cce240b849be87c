"""Benchmark: where the NumPy-BLAS metric step spends its time beyond the floor, piece by piece.

Not a test. At the paper's size (10,662 × 384 float32, 2 clusters: polarity × MiniLM's shape, random points) and with
NumPy's BLAS forced (``ISOFLOW_CPU_GEMM=numpy``), one process times (median of 5, after one warm-up): the floor
(blocked GEMM + square roots, as ``benchmarks/metrics.py`` defines it), the silhouette's rescaling and centring, its
per-cluster distance sums (products, roots and sums), the last step from sums to the mean silhouette in NumPy and in
torch (each right after a NumPy product, as in the step), IsoScore's column means two ways, IsoScore, and the whole
step; then one block's per-cluster sums both ways at 2, 4 and 8 clusters (``silhouette.GEMV_UP_TO_K``). Writes
``benchmarks/results/metric_step_parts.json``.
Run: ``python benchmarks/metric_step_parts.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

os.environ["ISOFLOW_CPU_GEMM"] = "numpy"  # before isoflow reads it: the parts of the NumPy path

import torch  # noqa: E402
from metrics import _floor_step  # noqa: E402  (benchmarks/metrics.py: the floor as it defines it)

from isoflow.atomic import atomic_file  # noqa: E402
from isoflow.metrics import encode_labels  # noqa: E402
from isoflow.metrics._validate import _chunked_column_means  # noqa: E402
from isoflow.metrics.isotropy import isoscore_tensor  # noqa: E402
from isoflow.records import run_provenance  # noqa: E402

OUT = Path(__file__).parent / "results" / "metric_step_parts.json"
N, D, K, BLOCK = 10_662, 384, 2, 1024


def median_of(fn, reps: int = 5) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def paper_size_data(n: int = N) -> tuple[np.ndarray, np.ndarray, object]:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, D)).astype(np.float32)
    codes = rng.integers(0, K, n)
    return X, codes, encode_labels(torch.from_numpy(codes), n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="JSON output")
    parser.add_argument("--tiny", action="store_true", help=f"{2 * BLOCK} points (two blocks): the script in seconds")
    args = parser.parse_args()
    n = 2 * BLOCK if args.tiny else N
    sil = importlib.import_module("isoflow.metrics.silhouette")  # the module, not the function of that name
    rng = np.random.default_rng(1)
    X, codes, clusters = paper_size_data(n)
    xt = torch.from_numpy(X)
    left, right = sil._augmented_numpy(X)
    buf = np.empty((BLOCK, BLOCK), dtype=np.float32)
    S_t = sil._euclidean_cluster_sums_numpy(X, codes, K, BLOCK)
    sizes = clusters.sizes.numpy()

    def after_a_product(fn):
        def run() -> None:
            np.matmul(left[:BLOCK], right[:BLOCK].T, out=buf)  # OpenBLAS's threads left spinning, as in the step
            fn()

        return run

    def block_sums(k: int, gemv: bool):
        # One block's sums into its columns' and its rows' points, k clusters: the two ways of
        # _euclidean_cluster_sums_numpy (GEMV_UP_TO_K picks), on a block of distances fresh from its product.
        onehot_t = (rng.integers(0, k, BLOCK)[None, :] == np.arange(k)[:, None]).astype(np.float32)
        onehot = np.ascontiguousarray(onehot_t.T)

        def run() -> None:
            np.matmul(left[:BLOCK], right[BLOCK : 2 * BLOCK].T, out=buf)
            np.abs(buf, out=buf)
            t0 = time.perf_counter()
            if gemv:
                [(onehot_t[c] @ buf, buf @ onehot_t[c]) for c in range(k)]
            else:
                onehot_t @ buf, buf @ onehot
            return time.perf_counter() - t0

        return run

    parts = {
        "floor: blocked GEMM + square roots": _floor_step(X, "cpu")[0],  # benchmarks/metrics.py's own
        "one block product (part of the two 'sums to mean' lines)": after_a_product(lambda: None),
        "rescaling, centring, augmented rows": lambda: sil._augmented_numpy(X),
        "silhouette cluster sums (incl. the above)": lambda: sil._euclidean_cluster_sums_numpy(X, codes, K, BLOCK),
        "sums to mean silhouette, NumPy": after_a_product(lambda: sil._silhouette_from_sums_numpy(S_t, codes, sizes)),
        "sums to mean silhouette, torch": after_a_product(
            lambda: sil._silhouette_from_sums(torch.from_numpy(S_t).T, clusters)
        ),
        "column means in float64, NumPy's reduction": lambda: X.mean(axis=0, dtype=np.float64),
        "column means in float64, chunked BLAS sums (IsoScore's)": lambda: _chunked_column_means(X),
        "IsoScore": lambda: isoscore_tensor(xt),
        "whole step (silhouette_tensor + isoscore_tensor)": lambda: (
            sil.silhouette_tensor(xt, clusters),
            isoscore_tensor(xt),
        ),
    }
    seconds = {}
    for name, fn in parts.items():
        seconds[name] = median_of(fn)
        print(f"{name:56s} {1000 * seconds[name]:8.2f} ms", flush=True)
    for k in (2, 4, 8):  # the sums alone, timed inside (after the block's product), median of 15
        for gemv in (True, False):
            name = f"block sums, {k} clusters, " + ("k matrix-vector products" if gemv else "thin GEMM")
            seconds[name] = float(np.median([block_sums(k, gemv)() for _ in range(16)][1:]))
            print(f"{name:56s} {1000 * seconds[name]:8.3f} ms", flush=True)
    result = {
        "case": f"{n:,} x {D} float32, {K} clusters, blocks of {BLOCK}; ISOFLOW_CPU_GEMM=numpy; median of 5 "
        "(block sums: one block, median of 15)",
        "seconds": seconds,
        "provenance": run_provenance(),  # the commit and versions that made these numbers
        "environment": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
        },
    }
    with atomic_file(args.out) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
