"""Benchmark: isoflow's silhouette + IsoScore against scikit-learn + the IsoScore package.

Not a test: it prints numbers and writes ``benchmarks/results/metrics.json``.
For each size and dtype it measures, in the same run on the same machine:

* wall time of one "metric step" (silhouette + IsoScore, as after every update
  of the experiment: ``silhouette_tensor`` and ``isoscore_tensor`` on input the loop checked once): isoflow vs
  ``sklearn.metrics.silhouette_score`` + ``IsoScore.IsoScore``, and the speed ratio;
* the machine's floor for that step: the silhouette's blocked distance GEMMs and square roots alone, at the faster
  of NumPy's and torch's BLAS, measured ``--runs`` times interleaved with isoflow's step; ``fraction_of_floor`` =
  floor / isoflow (the median of the runs; 1 would be no overhead at all);
* the values and their absolute difference;
* achieved GFLOP/s of isoflow's step (floating-point operations it actually
  performs / its wall time), and its fraction of this machine's GEMM speed:
  (time the same operations would take at the measured torch GEMM rate, the
  silhouette in the input dtype and IsoScore in float64) / (measured time);
* peak resident memory (process + data + step), each side in a fresh subprocess
  that loads the data from .npy files.

Run: ``python benchmarks/metrics.py`` (about 5 minutes on 2 cores; ``--quick`` for a smoke run).
``--device cuda`` runs isoflow's side on the GPU (the reference stays on this machine's CPU, as it runs there)
and writes ``benchmarks/results/metrics-cuda.json`` with the GPU's name, the torch/CUDA versions and the
fraction of the GPU's own GEMM rate. On the CPU, the GEMM rate is the faster of torch's and NumPy's BLAS, the one
isoflow uses (:mod:`isoflow.metrics.device_policy`)."""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

CASES = [
    {"name": "paper (polarity x MiniLM)", "n": 10_662, "d": 384, "k": 2},
    {"name": "large (20k x mpnet)", "n": 20_000, "d": 768, "k": 3},
    # Multi-label: each distinct label set is a cluster (supersense x GloVe-50d: 821 sets among 2,275 words).
    {"name": "many clusters (supersense)", "n": 2_275, "d": 50, "k": 821},
]
DTYPES = ["float32", "float64"]
OUT = Path(__file__).parent / "results" / "metrics.json"


def make_data(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """SBERT-like data: unit vectors with a shared offset (anisotropy) and a class-dependent shift."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + 1.5 * rng.normal(size=d) + 0.6 * rng.normal(size=(k, d))[y]
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, y


GEMM_SHAPES = [(1024, 386, 1024), (2048, 768, 2048), (4096, 4096, 4096)]  # ours' block shape, mid, large square


# A smoke run's end to end (--tiny): its GEMM rate from the smallest shape only, the case a few hundred points.
TINY_CASE = {"name": "tiny", "n": 300, "d": 16, "k": 3}


def gemm_gflops(
    dtype: torch.dtype, reps: int = 3, device: str = "cpu", backend: str = "torch", shapes=GEMM_SHAPES
) -> float:
    """This machine's matmul throughput on ``device`` (CPU: torch's or NumPy's BLAS): the best over a few shapes."""
    best_rate = 0.0
    for m, kdim, _ in shapes:
        a = torch.randn(m, kdim, dtype=dtype, device=device)
        b = torch.randn(kdim, m, dtype=dtype, device=device)
        if backend == "numpy":
            a, b = a.numpy(), b.numpy()
        fn = (lambda: _sync(a @ b, device)) if backend == "torch" else (lambda: a @ b)  # noqa: B023 (called at once)
        fn()
        best = min(_time(fn, 1)[0] for _ in range(reps))
        best_rate = max(best_rate, 2 * m * kdim * m / best / 1e9)
    return best_rate


def _sync(value, device: str):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    return value


def ours_flops(n: int, d: int, k: int, block: int = 1024) -> dict[str, float]:  # block: the policy's, see main()
    """Floating-point operations isoflow performs for one silhouette (input dtype) + IsoScore (float64)."""
    nb = -(-n // block)
    sizes = [min(block, n - i * block) for i in range(nb)]
    pairs = sum(sizes[i] * sizes[j] for i in range(nb) for j in range(i, nb))  # visited upper-triangular blocks
    off_diag = pairs - sum(s * s for s in sizes)
    from isoflow.metrics.silhouette import SCATTER_ABOVE_K

    if k > SCATTER_ABOVE_K:  # many clusters: every pair in strips (both triangles), one add per distance
        return {"silhouette": 2 * (d + 2) * n * n + n * n, "isoscore_float64": 2 * n * d * d}
    # Augmented distance GEMM + cluster sums (a thin GEMM, both ways off the diagonal).
    sums = (pairs + off_diag) * 2 * k
    silhouette = 2 * (d + 2) * pairs + sums
    return {"silhouette": silhouette, "isoscore_float64": 2 * n * d * d}


def _time(fn, reps: int) -> tuple[float, float]:
    times, value = [], None
    for _ in range(reps):
        t = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), value


def _peak_rss_mb() -> float:
    """Peak resident set of this process (VmHWM). Unlike ru_maxrss, which Linux carries over
    from the parent across exec, VmHWM belongs to this address space alone."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # non-Linux fallback


def _floor_step(X: np.ndarray, device: str, block: int = 1024):
    """The silhouette's unavoidable work at this machine's best BLAS: the upper-triangular blocked distance GEMM
    (augmented rows, as isoflow forms them) and the square roots, with no clamp of the squared distances before the
    roots, no per-cluster sums, no IsoScore and no bookkeeping. On the CPU both NumPy's OpenBLAS and torch's MKL are
    timed and the faster one is the floor. Returns the floor and one whole X·Xᵀ with the same BLAS (never both in one
    process's timed work: their thread pools fight, and a floor process that used both died once)."""
    n = X.shape[0]
    sq = (X * X).sum(axis=1, keepdims=True)
    left = np.ascontiguousarray(np.hstack([X, sq, np.ones_like(sq)]))
    right = np.ascontiguousarray(np.hstack([-2.0 * X, np.ones_like(sq), sq]))
    blocks = [(i, min(i + block, n), j, min(j + block, n)) for i in range(0, n, block) for j in range(i, n, block)]

    buf = np.empty((block, block), dtype=X.dtype)  # allocated once, outside the timed work

    def numpy_floor():
        for i0, i1, j0, j1 in blocks:
            D = np.matmul(left[i0:i1], right[j0:j1].T, out=buf[: i1 - i0, : j1 - j0])
            with np.errstate(invalid="ignore"):
                np.sqrt(D, out=D)
        return (0.0, 0.0)

    tl, tr = torch.from_numpy(left).to(device), torch.from_numpy(right).to(device)

    def torch_floor():
        for i0, i1, j0, j1 in blocks:
            (tl[i0:i1] @ tr[j0:j1].T).sqrt_()
        _sync(None, device)
        return (0.0, 0.0)

    Xt = torch.from_numpy(X).to(device)
    torch_side = (torch_floor, lambda: _sync(Xt @ Xt.T, device))
    if str(device).startswith("cuda"):
        return torch_side
    best = {}
    for name, f in (("numpy", numpy_floor), ("torch", torch_floor)):
        f()
        best[name] = min(_time(f, 1)[0] for _ in range(3))
    return (numpy_floor, lambda: X @ X.T) if best["numpy"] <= best["torch"] else torch_side


def _run_step(which: str, data: Path, dtype: str, reps: int, q: mp.Queue, device: str = "cpu") -> None:
    """One side of the comparison, in a fresh process so that its peak RSS is its own; an error is sent back to the
    parent (which would otherwise wait for a result forever)."""
    try:
        q.put(_step_result(which, data, dtype, reps, device))
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent, named
        import traceback

        q.put({"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})


def _step_result(which: str, data: Path, dtype: str, reps: int, device: str) -> dict:
    """The data are read from .npy files (no generation temporaries), so the peak measures the process, the data and
    the metric step alone."""
    X = np.load(data / f"X_{dtype}.npy")
    y = np.load(data / "y.npy")
    if which == "ours":  # what the optimisation loop does after every update (its input checked once, before it)
        from isoflow.metrics import encode_labels
        from isoflow.metrics.isotropy import isoscore_tensor
        from isoflow.metrics.silhouette import silhouette_tensor

        Xt = torch.from_numpy(X).to(device)
        clusters = encode_labels(torch.from_numpy(y), len(y), device=Xt.device)
        step = lambda: _sync((float(silhouette_tensor(Xt, clusters)), float(isoscore_tensor(Xt))), device)  # noqa: E731
    else:
        from IsoScore.IsoScore import IsoScore
        from sklearn.metrics import silhouette_score

        step = lambda: (float(silhouette_score(X, y)), float(IsoScore(X)))  # noqa: E731
    if which == "floor":  # the machine's floor for the silhouette: its distance GEMMs and square roots, nothing else
        step, whole_product = _floor_step(X, device)
    base_rss = _peak_rss_mb()
    step()  # warm-up (thread pools, allocator)
    seconds, (sil, iso) = _time(step, reps)
    peak = _peak_rss_mb()
    result = {
        "seconds": seconds,
        "silhouette": sil,
        "isoscore": iso,
        "peak_rss_mb": peak,
        "step_rss_increase_mb": peak - base_rss,
    }
    if which == "floor":  # and the yardstick "one GEMM": the whole X·Xᵀ in X's dtype, the floor's BLAS, same process
        whole_product()  # warm-up
        result["xxt_seconds"] = _time(whole_product, reps)[0]
    return result


SUBPROCESS_TIMEOUT = 1800  # seconds one side may take before the benchmark gives up on it


def run_isolated(which: str, data: Path, dtype: str, reps: int, device: str = "cpu", timeout: float | None = None):
    """``which`` side's result from a fresh *spawned* process (a forked child of a process that has initialised CUDA
    cannot use it); a child that fails, dies or outlasts ``timeout`` raises here instead of leaving the parent
    waiting."""
    import queue

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_run_step, args=(which, data, dtype, reps, q, device))
    p.start()
    limit = timeout or SUBPROCESS_TIMEOUT
    deadline = time.monotonic() + limit
    result = None
    try:
        while result is None:
            try:
                result = q.get(timeout=1.0)
            except queue.Empty:
                problem = (
                    f"died (exit code {p.exitcode}) without a result"
                    if not p.is_alive()
                    else f"gave no result in {limit} s"
                    if time.monotonic() > deadline
                    else None
                )
                if problem:
                    raise RuntimeError(f"the {which} step's process {problem}") from None
    finally:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join()
        q.close()
        q.join_thread()
    if "error" in result:
        raise RuntimeError(f"the {which} step failed on {device}: {result['error']}\n{result['traceback']}")
    return result


def write_case(case: dict, folder: Path) -> Path:
    X, y = make_data(case["n"], case["d"], case["k"])
    np.save(folder / "y.npy", y)
    for dtype in DTYPES:
        np.save(folder / f"X_{dtype}.npy", X.astype(dtype))
    return folder


def _ms(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds >= 0.01 else f"{seconds * 1e3:.2f} ms"


def markdown_table(rows: list[dict]) -> str:
    """The README's table, rendered from the results."""
    lines = [
        "| case (n × d, k) | dtype | floor | isoflow (% of the floor) | one X·Xᵀ (isoflow ÷ it) | sklearn + IsoScore | "
        "speed-up | max abs Δ (sil, iso) | GFLOP/s (% of GEMM speed) | peak RSS isoflow / ref |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} ({r['n']:,} × {r['d']}, {r['k']}) | {r['dtype']} | {_ms(r['floor_seconds'])} | "
            f"{_ms(r['ours']['seconds'])} ({100 * r['fraction_of_floor']:.0f} %) | "
            f"{_ms(r['xxt_seconds'])} ({r['ours_over_xxt']:.1f}×) | "
            f"{r['reference']['seconds']:.3f} s | {r['speedup']:.1f}× | {r['abs_diff_silhouette']:.1e}, "
            f"{r['abs_diff_isoscore']:.1e} | "
            f"{r['ours_gflops']:.0f} ({100 * r['fraction_of_gemm']:.0f} %) | {r['ours']['peak_rss_mb']:.0f} / "
            f"{r['reference']['peak_rss_mb']:.0f} MB |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, one repetition (smoke run; not written unless --out)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON output (default {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT})",
    )
    parser.add_argument("--device", default="cpu", help="where isoflow's side runs: cpu (default) or cuda[:N]")
    parser.add_argument("--case", choices=[c["name"] for c in CASES], help="this case only (default: every case)")
    parser.add_argument(
        "--tiny",
        action="store_true",
        help=f"one case of {TINY_CASE['n']} points, the GEMM rate from the smallest shape: the whole script in seconds "
        "(its numbers say nothing of speed; the test suite's end-to-end run)",
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="times the floor and isoflow's step are measured, interleaved (median)"
    )
    args = parser.parse_args()
    cases = [c for c in CASES if args.case in (None, c["name"])]
    cases = [dict(c, n=c["n"] // 10, k=min(c["k"], c["n"] // 100)) for c in cases] if args.quick else cases
    cases = [TINY_CASE] if args.tiny else cases
    shapes = GEMM_SHAPES[:1] if args.tiny else GEMM_SHAPES
    cuda = args.device.startswith("cuda")
    smoke = args.quick or args.tiny
    out_path = args.out or (None if smoke else OUT.with_name("metrics-cuda.json") if cuda else OUT)

    from isoflow.metrics import device_policy as compute
    from isoflow.records import run_provenance

    backend = "torch" if cuda else compute.cpu_gemm()
    gemm = {dt: gemm_gflops(getattr(torch, dt), device=args.device, backend=backend, shapes=shapes) for dt in DTYPES}
    provenance = run_provenance()  # the commit and versions that made these numbers
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": args.device,
        "gpu": torch.cuda.get_device_name(args.device) if cuda else None,
        "cuda": torch.version.cuda if cuda else None,
        "gemm_backend": backend,
        "gemm_gflops": gemm,
        "torch_cpu_gemm_gflops": {dt: gemm_gflops(getattr(torch, dt), shapes=shapes) for dt in DTYPES},
    }
    print(
        f"{backend} GEMM on {args.device} (best of {len(shapes)} shapes): float32 {gemm['float32']:.1f} GFLOP/s, "
        f"float64 {gemm['float64']:.1f} GFLOP/s; torch on the CPU: {env['torch_cpu_gemm_gflops']['float32']:.1f} / "
        f"{env['torch_cpu_gemm_gflops']['float64']:.1f}"
    )
    rows = []
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            data = write_case(case, Path(tmp))
            sides = {}
            for dtype in DTYPES:
                # floor and ours `runs` times each, interleaved (a busy moment hits both); the reference once
                pairs = [
                    (
                        run_isolated("floor", data, dtype, 1 if smoke else 5, args.device),
                        run_isolated("ours", data, dtype, 1 if smoke else 5, args.device),
                    )
                    for _ in range(args.runs)
                ]
                sides[dtype] = (pairs, run_isolated("reference", data, dtype, 1))
        for dtype, (pairs, ref) in sides.items():
            fractions = [floor["seconds"] / ours["seconds"] for floor, ours in pairs]
            median_run = sorted(range(len(pairs)), key=lambda i: fractions[i])[len(pairs) // 2]
            floor, ours = pairs[median_run]
            xxt = statistics.median(f["xxt_seconds"] for f, _ in pairs)
            block_rows = compute.block_size(case["n"], args.device, getattr(torch, dtype), 1024, upper_triangle=True)
            flops = ours_flops(case["n"], case["d"], case["k"], block_rows)  # strips or square blocks: the same pairs
            total = sum(flops.values())
            # The fastest this work could run at GEMM speed: silhouette in `dtype`, IsoScore in float64.
            ideal_seconds = flops["silhouette"] / 1e9 / gemm[dtype] + flops["isoscore_float64"] / 1e9 / gemm["float64"]
            achieved = total / ours["seconds"] / 1e9
            row = {
                **case,
                "dtype": dtype,
                "ours": ours,
                "reference": ref,
                "speedup": ref["seconds"] / ours["seconds"],
                "abs_diff_silhouette": abs(ours["silhouette"] - ref["silhouette"]),
                "abs_diff_isoscore": abs(ours["isoscore"] - ref["isoscore"]),
                "ours_gflop": total / 1e9,
                "ours_gflops": achieved,
                "fraction_of_gemm": ideal_seconds / ours["seconds"],
                "floor_seconds": floor["seconds"],
                "fraction_of_floor": floor["seconds"] / ours["seconds"],
                "fraction_of_floor_runs": fractions,
                # the median over every floor process's X·Xᵀ: at the small sizes one process's varies 2-fold
                "xxt_seconds": xxt,
                "xxt_seconds_runs": [f["xxt_seconds"] for f, _ in pairs],
                "ours_over_xxt": ours["seconds"] / xxt,
            }
            rows.append(row)
            print(
                f"{case['name']:<28} {dtype}: floor {floor['seconds']:.3f}s, ours {ours['seconds']:.3f}s "
                f"({100 * row['fraction_of_floor']:.0f} % of the floor, {row['ours_over_xxt']:.1f}x one X.X^T) "
                f"vs reference {ref['seconds']:.3f}s "
                f"-> {row['speedup']:.1f}x | |dsil| {row['abs_diff_silhouette']:.1e} |diso| "
                f"{row['abs_diff_isoscore']:.1e} | "
                f"{achieved:.0f} GFLOP/s, {100 * row['fraction_of_gemm']:.0f}% of GEMM speed | peak RSS "
                f"{ours['peak_rss_mb']:.0f} MB "
                f"(ref {ref['peak_rss_mb']:.0f} MB)"
            )
    print()
    print(markdown_table(rows))
    if out_path is not None:
        from isoflow.atomic import atomic_file

        with atomic_file(out_path) as tmp:
            tmp.write_text(json.dumps({"provenance": provenance, "environment": env, "results": rows}, indent=2) + "\n")
        print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
