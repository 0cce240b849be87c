"""Benchmark: the layer analysis of MiniLM on 100,000 Brown tokens, every layer and every metric, per stage.

Not a test. Runs ``isoflow.layers.run_layers`` once in this process (its peak resident memory is the process's:
run the script on its own) and writes ``benchmarks/results/layers.json``: seconds per stage (reading the corpus,
loading the model, sampling, encoding, each layer's measurements) and the peak RSS. The target (README): ≤ 15 minutes
and ≤ 4 GB on this project's 2-core CPU. Run: ``python benchmarks/layers.py`` (Brown through ``$ISOFLOW_MIRROR``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

OUT = Path(__file__).parent / "results" / "layers.json"


def tiny_settings():
    """--tiny: 300 tokens, LID on 20 neighbours, K up to 3: every stage of the analysis, in seconds."""
    from isoflow.layers import LayerSettings

    return LayerSettings(max_tokens=300, k_lid=20, k_max=3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--corpus", default="brown")
    parser.add_argument("--max-tokens", type=int, default=100_000)
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=OUT)
    from paper_case import add_tiny

    add_tiny(parser)
    args = parser.parse_args()

    from isoflow.layers import LayerSettings, run_layers
    from isoflow.metrics import device_policy as compute
    from isoflow.records import run_provenance

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        out = run_layers(
            args.model,
            args.corpus,
            settings=tiny_settings() if args.tiny else LayerSettings(max_tokens=args.max_tokens),
            out=Path(tmp) / "layers",
            data_dir=args.data_dir,
            device=args.device,
            progress=False,
        )
        total = time.perf_counter() - t
        meta = json.loads((out / "meta.json").read_text())
    result = {
        "case": f"{args.model} x {args.corpus}, {meta['n_points']} points, {meta['n_layers']} layers, every metric",
        "total_seconds": total,
        "seconds_per_stage": meta["seconds"],
        "peak_rss_mb": meta["peak_rss_mb"],
        "targets": {"seconds": 15 * 60, "peak_rss_mb": 4096},
        "meets_targets": total <= 15 * 60 and meta["peak_rss_mb"] <= 4096,
        "provenance": run_provenance(),  # the commit and versions that made these numbers
        "environment": {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "device": args.device,
            **compute.describe(args.device),
        },
    }
    for stage, seconds in meta["seconds"].items():
        print(f"{stage:14s} {seconds:8.1f} s")
    print(f"total {total / 60:.1f} min, peak RSS {meta['peak_rss_mb']:.0f} MB")
    from paper_case import write_result

    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
