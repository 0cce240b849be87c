"""Benchmark: exact linear CKA and the spectrum's sizes (effective rank, participation ratio, stable rank) at the
paper's size and at 100k × 576 (a SmolLM2 layer's token states), against a GEMM of the same shape and a reference.

Not a test. Linear CKA of X and Y (n × d, the same points) is computed by isoflow from the d × d products XᵀX, YᵀY and
XᵀY: three n·d² products, O(d²) memory (isoflow.metrics.similarity). The spectrum's sizes come from one d × d scatter
matrix and its eigenvalues (isoflow.metrics.spectrum.spectrum_sizes). Each is timed against:

- **the GEMM floor**: one XᵀX of the same shape in float32, torch on this CPU (best of 3): CKA's three products are
  3× that work, the spectrum's sizes two (the points' scatter for the ranks, their covariance for the participation
  ratio), the effective rank one (eigenvalues are O(d³), small beside n·d² when n ≫ d); ``ratio_to_gemm`` (our
  seconds over one product's) and ``ratio_to_its_products`` say how far each is from the machine's matrix speed;
- **the reference stack**, where it fits in memory (the paper's case): CKA from the n × n Gram matrices as Kornblith
  et al. define it (NumPy, float64: HSIC = tr(KHLH)), and RankMe from NumPy's singular values; the values must agree.

And **the layer analysis' CKA matrix** (isoflow.layers.run.layer_cka): linear CKA between every pair of SmolLM2's 31
hidden states on the run's sample of 5,000 points (``linear_cka_matrix``: each layer centred once, L(L+1)/2 d × d
cross products), biased and debiased, against the same 496 pairs computed one by one with ``linear_cka`` (what a
loop over pairs costs) and against its own products' GEMM time.

Writes ``benchmarks/results/spectral.json``. Run: ``python benchmarks/spectral.py`` (a few minutes on 2 cores;
``--tiny``: a 300-point case in seconds, what the test suite runs).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from isoflow.atomic import atomic_file
from isoflow.metrics import linear_cka, linear_cka_matrix
from isoflow.metrics.spectrum import effective_rank, spectrum_sizes
from isoflow.records import run_provenance

CASES = [
    {"name": "paper (polarity x MiniLM)", "n": 10_662, "d": 384},
    {"name": "SmolLM2 layer (100k x 576)", "n": 100_000, "d": 576},
]
TINY_CASE = {"name": "tiny", "n": 300, "d": 16}
LAYERS_CASE = {"name": "CKA matrix, SmolLM2's layers", "layers": 31, "n": 5_000, "d": 576}
TINY_LAYERS_CASE = {"name": "tiny CKA matrix", "layers": 4, "n": 300, "d": 16}
REFERENCE_MAX_N = 12_000  # the Gram reference holds two n × n float64 matrices: 2.3 GB at the paper's size
OUT = Path(__file__).parent / "results" / "spectral.json"


def make_pair(n: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Anisotropic float32 points X (a decaying spectrum, a shared offset) and Y, a noisy linear map of X."""
    g = torch.Generator().manual_seed(seed)
    scales = torch.logspace(0, -2, d, dtype=torch.float64)
    x = torch.randn(n, d, generator=g, dtype=torch.float64) * scales + 0.5
    y = x @ torch.randn(d, d, generator=g, dtype=torch.float64) / d**0.5 + 0.1 * torch.randn(n, d, generator=g)
    return x.float(), y.float()


def best_seconds(fn, reps: int = 3) -> tuple[float, object]:
    value, best = None, float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def reference_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Kornblith et al.'s definition from the n × n Gram matrices, in float64: CKA = HSIC(K, L) / √(HSIC(K, K)·
    HSIC(L, L)), HSIC(K, L) ∝ tr(KHLH) = Σ (HKH) ∘ (HLH), H the centring matrix (as row and column means: O(n²))."""

    def centred_gram(a):
        k = a.astype(np.float64) @ a.astype(np.float64).T
        return k - k.mean(axis=0, keepdims=True) - k.mean(axis=1, keepdims=True) + k.mean()

    kc = centred_gram(x)
    hsic_kk = (kc * kc).sum()
    lc = centred_gram(y)
    return float((kc * lc).sum() / np.sqrt(hsic_kk * (lc * lc).sum()))


def reference_rankme(x: np.ndarray) -> float:
    """The effective rank (RankMe without its ε, as isoflow computes it) from NumPy's singular values of the uncentred
    points: exp of the entropy of σ/Σσ, 0·log 0 = 0."""
    s = np.linalg.svd(x.astype(np.float64), compute_uv=False)
    p = s / s.sum()
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def case_result(case: dict, reps: int) -> dict:
    x, y = make_pair(case["n"], case["d"])
    gemm, _ = best_seconds(lambda: x.T @ x, reps)
    rows = {
        "gemm_float32_seconds": gemm,
        "gemm_gflops": 2 * case["n"] * case["d"] ** 2 / gemm / 1e9,
    }
    for name, fn, products in (
        ("cka", lambda: linear_cka(x, y), 3),
        ("cka_debiased", lambda: linear_cka(x, y, debiased=True), 3),
        ("spectrum_sizes", lambda: spectrum_sizes(x), 2),  # the points' scatter and their covariance
        ("effective_rank", lambda: effective_rank(x), 1),
    ):
        seconds, value = best_seconds(fn, reps)
        value = value if isinstance(value, dict) else float(value)
        rows[name] = {
            "value": value,
            "seconds": seconds,
            "products": products,
            "ratio_to_gemm": seconds / gemm,
            "ratio_to_its_products": seconds / (products * gemm),
        }
    if case["n"] <= REFERENCE_MAX_N:
        xn, yn = x.numpy(), y.numpy()
        seconds, value = best_seconds(lambda: reference_cka(xn, yn), 1)
        rows["reference_cka"] = {"value": value, "seconds": seconds, "speedup": seconds / rows["cka"]["seconds"]}
        seconds, value = best_seconds(lambda: reference_rankme(xn), 1)
        rows["reference_rankme"] = {
            "value": value,
            "seconds": seconds,
            "speedup": seconds / rows["effective_rank"]["seconds"],
        }
        rows["abs_diff_cka"] = abs(rows["cka"]["value"] - rows["reference_cka"]["value"])
        rows["abs_diff_rankme"] = abs(rows["effective_rank"]["value"] - rows["reference_rankme"]["value"])
    return {**case, "dtype": "float32", **rows}


def layers_result(case: dict, reps: int) -> dict:
    """The CKA matrix of ``layers`` representations (each a noisy linear map of the one before, as a residual
    stream's layers), biased and debiased, against the pairs one by one and the GEMM time of its products."""
    g = torch.Generator().manual_seed(1)
    reps_ = [make_pair(case["n"], case["d"])[0]]
    for _ in range(case["layers"] - 1):
        step = torch.randn(case["d"], case["d"], generator=g) / case["d"] ** 0.5
        reps_.append(reps_[-1] + 0.3 * reps_[-1] @ step)
    x = reps_[0]
    gemm, _ = best_seconds(lambda: x.T @ x, reps)
    pairs = case["layers"] * (case["layers"] + 1) // 2
    rows = {"gemm_float32_seconds": gemm, "gemm_gflops": 2 * case["n"] * case["d"] ** 2 / gemm / 1e9, "pairs": pairs}
    for name, debiased in (("cka_matrix", False), ("cka_matrix_debiased", True)):
        seconds, matrix = best_seconds(lambda d=debiased: linear_cka_matrix(reps_, debiased=d), reps)
        loop_seconds, loop = best_seconds(
            lambda d=debiased: [
                [linear_cka(a, b, debiased=d) if i <= j else None for j, b in enumerate(reps_)]
                for i, a in enumerate(reps_)
            ],
            1,
        )
        upper = [(i, j) for i in range(case["layers"]) for j in range(i, case["layers"])]
        rows[name] = {
            "seconds": seconds,
            "products": pairs,
            "ratio_to_its_products": seconds / (pairs * gemm),
            "pairs_one_by_one_seconds": loop_seconds,
            "speedup_over_pairs": loop_seconds / seconds,
            "max_abs_diff_from_pairs": max(abs(float(matrix[i, j]) - loop[i][j]) for i, j in upper),
            "first_to_last": float(matrix[0, -1]),
        }
    return {**case, "dtype": "float32", **rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="JSON output")
    parser.add_argument("--tiny", action="store_true", help=f"the {TINY_CASE['n']}-point case only: in seconds")
    args = parser.parse_args()
    results = []
    for case in [TINY_CASE] if args.tiny else CASES:
        row = case_result(case, reps=1 if args.tiny else 3)
        results.append(row)
        agree = f", |CKA - Gram reference| {row['abs_diff_cka']:.1e}" if "abs_diff_cka" in row else ""
        print(
            f"{case['name']:<28} GEMM XᵀX {row['gemm_float32_seconds']:.3f} s ({row['gemm_gflops']:.0f} GFLOP/s); "
            f"CKA {row['cka']['seconds']:.3f} s ({row['cka']['ratio_to_gemm']:.1f}x one product), spectrum "
            f"{row['spectrum_sizes']['seconds']:.3f} s ({row['spectrum_sizes']['ratio_to_gemm']:.1f}x){agree}"
        )
    layers = layers_result(TINY_LAYERS_CASE if args.tiny else LAYERS_CASE, reps=1 if args.tiny else 2)
    for name in ("cka_matrix", "cka_matrix_debiased"):
        row = layers[name]
        print(
            f"{layers['name']:<28} {name}: {row['seconds']:.2f} s for {layers['pairs']} pairs "
            f"({row['ratio_to_its_products']:.1f}x their products' GEMM time; pairs one by one "
            f"{row['pairs_one_by_one_seconds']:.2f} s, |diff| {row['max_abs_diff_from_pairs']:.1e})"
        )
    with atomic_file(args.out) as tmp:
        record = {
            "provenance": run_provenance(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "results": results,
            "layers": layers,
        }
        tmp.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
