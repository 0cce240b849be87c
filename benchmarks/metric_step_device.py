"""Benchmark: the metric step on one device beside one X·Xᵀ, as it runs and with square blocks, with its launches.

Not a test; meant for a lent GPU (``benchmarks/gpu_check.sh`` runs it there), and it runs on a CPU too. In one
process, for each case of ``benchmarks/metrics.py`` (float32) and 8,000 × 384 with 821 label sets, it times (median of
``--reps`` after a warm-up, the device synchronised around each): the metric step (``silhouette_tensor`` then
``isoscore_tensor``, as after every update of the optimisation), the same step with the silhouette's upper triangle in
square blocks (one product per pair of blocks, not one per row block's strip: ``device_policy.triangle_blocks``), and
one whole X·Xᵀ, the yardstick of the GPU goal (the step within 2× of it at the paper's size). It also counts the
kernels the step launches (the profiler's ``cudaLaunchKernel*`` calls on a GPU) beside the operations it dispatches
(``benchmarks/launches.py``, the count made on a CPU), and checks that both silhouettes agree. The device's own block
policy holds; at the paper's size the step is also timed with n cut in 1, 2, 4 and 8 row blocks (``GPU_SPLIT``).
Writes ``benchmarks/results/metric-step-<device>.json`` (``--out`` elsewhere).
Run: ``python benchmarks/metric_step_device.py --device cuda`` (under a minute on an H100).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path
from unittest import mock

import torch
from launches import case_data, count, square_blocks  # the operations a step dispatches, the same data
from metrics import CASES, TINY_CASE, _sync, _time

from isoflow.atomic import atomic_file
from isoflow.metrics import device_policy
from isoflow.metrics.isotropy import isoscore_tensor
from isoflow.metrics.silhouette import silhouette_tensor
from isoflow.records import run_provenance

STEP_CASES = [*CASES, {"name": "many clusters, 8k x 384", "n": 8_000, "d": 384, "k": 821}]
RESULTS = Path(__file__).parent / "results"
SPLITS = (1, 2, 4, 8)  # at the paper's size: fewer flops with more row blocks (the upper triangle), more launches


def median_ms(fn, device: torch.device, reps: int) -> float:
    """The median of ``reps`` timed calls of ``fn`` after a warm-up, each ended by synchronising the device."""
    synced = lambda: _sync(fn(), device)  # noqa: E731
    synced()
    return 1e3 * _time(synced, reps)[0]


def kernel_launches(fn, device: torch.device) -> int | None:
    """The kernels ``fn`` launches on a GPU (the profiler's launch calls); None on a CPU, which launches none."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        _sync(fn(), device)
    return sum(e.count for e in prof.key_averages() if e.key.startswith("cudaLaunchKernel"))


def case_result(case: dict, device: torch.device, reps: int, splits: tuple[int, ...] = ()) -> dict:
    x, clusters = case_data(case["n"], case["d"], case["k"], device)

    def step():
        return silhouette_tensor(x, clusters), isoscore_tensor(x)

    with square_blocks():
        square_ms, square_sil = median_ms(step, device, reps), float(step()[0])
        square_ops = count(step)
    sil, iso = (float(v) for v in step())
    rows, columns = device_policy.triangle_blocks(case["n"], device, x.dtype, 1024)
    result = {
        **case,
        "dtype": "float32",
        "rows_per_block": rows,
        "columns_per_product": columns,
        "step_ms": median_ms(step, device, reps),
        "step_square_blocks_ms": square_ms,
        "xxt_ms": median_ms(lambda: x @ x.T, device, reps),
        "silhouette": sil,
        "isoscore": iso,
        "abs_diff_square_blocks": abs(sil - square_sil),
        "operations": sum(count(step).values()),
        "operations_square_blocks": sum(square_ops.values()),
        "kernel_launches": kernel_launches(step, device),
    }
    result["step_over_xxt"] = result["step_ms"] / result["xxt_ms"]
    if splits:  # the step with n cut in other numbers of row blocks (device_policy.GPU_SPLIT; blocks of ≥ 1,024 rows)
        result["step_ms_by_split"] = {}
        for split in splits:
            with mock.patch.multiple(device_policy, GPU_SPLIT=split, GPU_MIN_BLOCK=1024):
                result["step_ms_by_split"][str(split)] = median_ms(step, device, reps)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--reps", type=int, default=25, help="timed repetitions of each (median)")
    parser.add_argument("--case", choices=[c["name"] for c in STEP_CASES], help="this case only (default: every case)")
    parser.add_argument("--out", type=Path, help="JSON output (default benchmarks/results/metric-step-<device>.json)")
    parser.add_argument("--tiny", action="store_true", help=f"the {TINY_CASE['n']}-point case, 2 repetitions")
    args = parser.parse_args()
    cases = [TINY_CASE] if args.tiny else STEP_CASES
    args.reps = 2 if args.tiny else args.reps
    device = torch.device(args.device)
    out = args.out or RESULTS / f"metric-step-{device.type}.json"
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "cuda": torch.version.cuda if device.type == "cuda" else None,
        "torch_threads": torch.get_num_threads(),
        **device_policy.describe(device),
    }
    rows = []
    for case in cases:
        if args.case not in (None, case["name"]):
            continue
        row = case_result(case, device, args.reps, SPLITS if case["name"] == CASES[0]["name"] else ())
        rows.append(row)
        launches = "" if row["kernel_launches"] is None else f", {row['kernel_launches']} kernel launches"
        print(
            f"{case['name']:<28} step {row['step_ms']:.3f} ms ({row['step_over_xxt']:.2f}x one X.X^T of "
            f"{row['xxt_ms']:.3f} ms; square blocks {row['step_square_blocks_ms']:.3f} ms), "
            f"{row['operations']} operations ({row['operations_square_blocks']} square){launches}",
            flush=True,
        )
    with atomic_file(out) as tmp:
        record = {"provenance": run_provenance(), "environment": env, "results": rows}
        tmp.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
