"""Benchmark: how many torch operations one metric step dispatches under the GPU block policy, the CPU's stand-in for
a GPU's kernel launches, and how many of them make the host wait for the device.

Not a test. On an H100 the metric step at the paper's size was bound by the host's kernel launches, not by the GPU's
work (benchmarks/results/gpu-check-2026-11-27: the silhouette 3.2 ms of wall time with 2.4 ms on the GPU, 113
launches). The operations are set by the code, not by the device, so they can be counted anywhere: with the GPU
policy forced (``ISOFLOW_BLOCK_POLICY=gpu``, 2 GiB assumed free) each case's silhouette and IsoScore run once under a
``TorchDispatchMode`` that counts every operation reaching a kernel (views excluded: they launch nothing). On a GPU
most of them are one launch each (a few are two, a few none), so the count follows the host's work per step. Host
syncs (a value read back, a shape known only after the device's work) are counted apart. The silhouette is counted
twice in the same run: as it runs (each row block's strip in one product, ``device_policy.triangle_blocks``) and with
square blocks (one product per pair of blocks). Writes ``benchmarks/results/launches.json``.
Run: ``python benchmarks/launches.py`` (about 20 s; the counts do not depend on the machine).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections import Counter
from pathlib import Path
from unittest import mock

import torch
from metrics import CASES, TINY_CASE, make_data  # benchmarks/metrics.py: the same cases and data
from torch.utils._python_dispatch import TorchDispatchMode

from isoflow.atomic import atomic_file
from isoflow.metrics import Clusters, device_policy, encode_labels
from isoflow.metrics.isotropy import isoscore_tensor
from isoflow.metrics.silhouette import silhouette_tensor
from isoflow.records import run_provenance

silhouette_module = importlib.import_module("isoflow.metrics.silhouette")  # the package's name is the function's
# Operations whose result the host must wait for: a value read back (.item(), float()) or a shape known only after
# the device's work (nonzero, boolean masks). On a GPU each stalls every launch behind it until the device catches up.
HOST_SYNCS = ("_local_scalar_dense", "nonzero", "masked_select")
OUT = Path(__file__).parent / "results" / "launches.json"


class OperationCount(TorchDispatchMode):
    """Counts the operations dispatched inside it that compute (not views), by name."""

    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view:
            self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def count(step) -> Counter:
    with OperationCount() as counter:
        step()
    return counter.ops


def case_counts(n: int, d: int, k: int, device: str = "cpu") -> dict:
    """The operations of one silhouette (strips, and square blocks) and one IsoScore of an n × d float32 case, under
    the GPU block policy (and, on a CPU, torch's BLAS: the path a GPU runs; NumPy's dispatches nothing)."""
    gpu_policy = {device_policy.POLICY_ENV: "gpu", device_policy.GEMM_ENV: "torch"}
    with mock.patch.dict(os.environ, gpu_policy):
        return _counts(n, d, k, device)


def case_data(n: int, d: int, k: int, device: str | torch.device) -> tuple[torch.Tensor, Clusters]:
    """benchmarks/metrics.py's data for a case, float32 on ``device``, and its clusters."""
    X, y = make_data(n, d, k)
    x = torch.tensor(X, dtype=torch.float32, device=device)
    return x, encode_labels(torch.from_numpy(y).to(device), n, device=x.device)


def square_blocks():
    """Inside it, the silhouette's upper triangle goes in square blocks, one product per pair (the policy's rows, as
    many columns), not one per row block's strip."""

    def square(n, device, dtype, cpu_block, rows=None):
        rows, _ = device_policy.triangle_blocks(n, device, dtype, cpu_block, rows)
        return rows, rows

    return mock.patch.object(silhouette_module, "triangle_blocks", square)


def _counts(n: int, d: int, k: int, device: str) -> dict:
    x, clusters = case_data(n, d, k, device)
    strips = count(lambda: silhouette_tensor(x, clusters))
    with square_blocks():
        blocks = count(lambda: silhouette_tensor(x, clusters))
    iso = count(lambda: isoscore_tensor(x))
    syncs = sum((strips + iso)[op] for op in HOST_SYNCS)
    rows, columns = device_policy.triangle_blocks(n, x.device, x.dtype, 1024)
    return {
        "rows_per_block": rows,
        "columns_per_product": columns,
        "silhouette": sum(strips.values()),
        "silhouette_square_blocks": sum(blocks.values()),
        "isoscore": sum(iso.values()),
        "step": sum(strips.values()) + sum(iso.values()),
        "host_syncs": syncs,
        "silhouette_by_operation": dict(strips.most_common()),
        "isoscore_by_operation": dict(iso.most_common()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="JSON output")
    parser.add_argument("--device", default="cpu", help="where the step runs (the counts are the same anywhere)")
    parser.add_argument("--tiny", action="store_true", help=f"the {TINY_CASE['n']}-point case only: in seconds")
    args = parser.parse_args()
    rows = []
    for case in [TINY_CASE] if args.tiny else CASES:
        counts = case_counts(case["n"], case["d"], case["k"], args.device)
        rows.append({**case, "dtype": "float32", **counts})
        print(
            f"{case['name']:<28} silhouette {counts['silhouette']:>4} operations "
            f"({counts['silhouette_square_blocks']} with square blocks), IsoScore {counts['isoscore']:>3}, "
            f"step {counts['step']:>4}, host syncs {counts['host_syncs']}"
        )
    with atomic_file(args.out) as tmp:
        tmp.write_text(
            json.dumps(
                {
                    "provenance": run_provenance(),
                    "policy": "gpu (forced), 2 GiB assumed free",
                    "torch": torch.__version__,
                    "device": args.device,
                    "results": rows,
                },
                indent=2,
            )
            + "\n"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
