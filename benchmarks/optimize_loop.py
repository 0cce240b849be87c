"""Benchmark: wall time per update of the optimisation loop, isoflow vs the same loop on the reference stack.

Not a test. At the paper's size (polarity × all-MiniLM-L6-v2: 10,662 × 384, 2
labels), one update = forward + backward + Adam step + the per-update metrics.

* isoflow: :func:`isoflow.optimize.optimize` (metrics on the device, one host
  transfer per update);
* reference: the same model and optimiser (``torch.optim.Adam`` defaults, lr
  1e-3), with ``sklearn.metrics.silhouette_score`` and ``IsoScore.IsoScore`` on
  the table copied to numpy after every update.

Both start from the same embeddings and seed, in the same process, one after
the other. Writes ``benchmarks/results/optimize_loop.json``.
Run: ``python benchmarks/optimize_loop.py`` (needs ``isoflow prepare polarity``
and ``isoflow encode --model minilm --dataset polarity``; it runs them if missing,
through ``$ISOFLOW_MIRROR``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).parent / "results" / "optimize_loop.json"


def reference_loop(emb: np.ndarray, y: np.ndarray, steps: int, seed: int) -> tuple[float, list[tuple[float, float]]]:
    from IsoScore.IsoScore import IsoScore
    from sklearn.metrics import silhouette_score

    torch.manual_seed(seed)
    table = torch.nn.Parameter(torch.tensor(emb))
    head = torch.nn.Linear(emb.shape[1], int(y.max()) + 1)
    opt = torch.optim.Adam([table, *head.parameters()], lr=1e-3)
    target = torch.tensor(y)
    values = []
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(head(table), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        X = table.detach().numpy()
        values.append((float(silhouette_score(X, y)), float(IsoScore(X))))
    return (time.perf_counter() - t0) / steps, values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--steps", type=int, default=20, help="updates timed for isoflow (default 20)")
    parser.add_argument("--ref-steps", type=int, default=5, help="updates timed for the reference (default 5)")
    parser.add_argument("--out", type=Path, default=OUT)
    from paper_case import TINY_SENTENCES, add_tiny, polarity_minilm

    add_tiny(parser)
    args = parser.parse_args()
    if args.tiny:
        args.steps, args.ref_steps = 2, 1

    from isoflow.optimize import Settings, optimize
    from isoflow.records import run_provenance

    task, emb = polarity_minilm(args.data_dir, TINY_SENTENCES if args.tiny else None)
    y = np.searchsorted(np.asarray(task.label_names), task.examples["label"].to_numpy())

    optimize(task, emb, Settings("polarity", "minilm", 0, 2), progress=False)  # warm-up
    traj = optimize(task, emb, Settings("polarity", "minilm", 0, args.steps), progress=False)
    ours = traj.info["seconds_per_update"]
    reference_loop(emb, y, 1, 0)  # warm-up
    ref, ref_values = reference_loop(emb, y, args.ref_steps, 0)
    # Same seed, same updates: the reference's values after update 1 must match ours at step 1.
    diff_sil = abs(ref_values[0][0] - traj.records["silhouette"][1])
    diff_iso = abs(ref_values[0][1] - traj.records["isoscore"][1])
    result = {
        "case": f"polarity x minilm ({emb.shape[0]:,} x {emb.shape[1]}, 2 labels)",
        "isoflow_seconds_per_update": ours,
        "reference_seconds_per_update": ref,
        "speedup": ref / ours,
        "isoflow_projected_1000_updates_minutes": ours * 1000 / 60,
        "abs_diff_after_update_1": {"silhouette": diff_sil, "isoscore": diff_iso},
        "timed_updates": {"isoflow": args.steps, "reference": args.ref_steps},
        "provenance": run_provenance(),  # the commit and versions that made these numbers
        "environment": {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "device": traj.info["device"],
            "cpu_gemm": traj.info.get("cpu_gemm"),
        },
    }
    print(
        f"isoflow {ours * 1000:.0f} ms/update vs reference {ref * 1000:.0f} ms/update -> {ref / ours:.1f}x; "
        f"1000 updates ~ {ours * 1000 / 60:.1f} min; |dsil| {diff_sil:.1e}, |diso| {diff_iso:.1e} after update 1"
    )
    from paper_case import write_result

    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
