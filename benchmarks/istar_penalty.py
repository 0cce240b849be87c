"""Benchmark: what the I-STAR penalty adds to one update of the optimisation loop, at the paper's size.

Not a test. polarity × all-MiniLM-L6-v2 (10,662 × 384): the plain loop (λ = 0, which computes no penalty) against
λ = 1 with the penalty's backward product in float32 (the default) and in float64. Each variant is warmed up, then
the variants alternate in one process with the order rotated at every repeat (this shared VM's speed drifts by
±10 % between runs, and the first run after another variant is often slower), so that drift hits all alike; the
ratios use the medians of the repeats. Writes ``benchmarks/results/istar_penalty.json``. Run: ``python
benchmarks/istar_penalty.py`` (prepares and
encodes polarity through ``$ISOFLOW_MIRROR`` if needed).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
from pathlib import Path

import torch

OUT = Path(__file__).parent / "results" / "istar_penalty.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--steps", type=int, default=10, help="updates per timed run (default 10)")
    parser.add_argument("--repeats", type=int, default=6, help="alternating repeats of each variant (default 6)")
    parser.add_argument("--out", type=Path, default=OUT)
    from paper_case import TINY_SENTENCES, add_tiny, polarity_minilm

    add_tiny(parser)
    args = parser.parse_args()
    if args.tiny:
        args.steps, args.repeats = 2, 1

    from isoflow.optimize import Settings, optimize
    from isoflow.records import run_provenance

    task, emb = polarity_minilm(args.data_dir, TINY_SENTENCES if args.tiny else None)

    variants = {
        "plain (lambda 0)": dict(istar_lambda=0.0),
        "I-STAR lambda 1, float32 penalty": dict(istar_lambda=1.0, penalty_dtype="float32"),
        "I-STAR lambda 1, float64 penalty": dict(istar_lambda=1.0, penalty_dtype="float64"),
    }
    names = list(variants)
    for extra in variants.values():  # warm-up
        optimize(task, emb, Settings("polarity", "minilm", 0, 2, **extra), progress=False)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(args.repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            traj = optimize(task, emb, Settings("polarity", "minilm", 0, args.steps, **variants[name]), progress=False)
            times[name].append(traj.info["seconds_per_update"])
    median = {name: statistics.median(t) for name, t in times.items()}
    base = median["plain (lambda 0)"]
    result = {
        "case": f"polarity x minilm ({emb.shape[0]:,} x {emb.shape[1]}, 2 labels), one update = forward, backward, "
        "Adam, silhouette, "
        "IsoScore, IsoScore*",
        "seconds_per_update_median": median,
        "seconds_per_update_all": times,
        "overhead_vs_plain": {name: m / base - 1.0 for name, m in median.items()},
        "timed_updates_per_run": args.steps,
        "repeats": args.repeats,
        "provenance": run_provenance(),  # the commit and versions that made these numbers
        "environment": {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "device": traj.info["device"],
        },
    }
    for name, m in median.items():
        print(f"{name:36s} {m * 1000:7.1f} ms/update  ({(m / base - 1) * 100:+.1f} % vs plain)")
    from paper_case import write_result

    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
