"""Benchmark: `isoflow layers --estimate` (isoflow.layers.estimate) against a timed run. It makes again the model
folder and the text a `benchmarks/large_layers.py` JSON's run read (the shape's random weights and tokenizer, Brown's
sentences in their seeded orders: the same files, built the same way), estimates that run on this machine as a user
would before making it — its positions counted, a few of its batches encoded, the measuring's kernels and two random
states timed — and writes the estimate beside the run's own seconds and peak memory:

    python benchmarks/large_layers.py --shape llama-3.2-1b --dtype bfloat16 --tokens 20000 --sample-cap 5000 \\
        --states sample --corpus brown --mirror ../shared/data --out results/large-layers-1b-time.json
    python benchmarks/layer_estimate.py --check results/large-layers-1b-time.json --mirror ../shared/data \\
        --out results/layer-estimate.json

Both on the same machine, quiet (the load average is recorded before and after each).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

import large_layers
import model_shapes

WITHIN = {"seconds": 0.25, "memory": 0.15}  # the bounds on the time and the peak memory


def checked_command(run: dict) -> argparse.Namespace:
    """The checked run's command line, read by large_layers' parser (its defaults where the command left one out)."""
    words = shlex.split(run["what"])
    return large_layers.parser().parse_args(words[words.index("benchmarks/large_layers.py") + 1 :])


def estimate(args: argparse.Namespace, mirror: Path, work: Path) -> dict:
    """The estimate of the run ``args`` made, on the files it read, made again under ``work``."""
    from isoflow.layers.estimate import estimate_layers
    from isoflow.models.spec import ModelSpec

    text = large_layers.text_of(args.tokens, work / "text.txt", args.corpus, mirror)
    model_shapes.write_model(args.shape, work / "model", args.saved_dtype or args.dtype, text)
    spec = ModelSpec(str(work / "model"), f"{args.shape}-random", None, args.dtype)
    settings = large_layers.run_settings(args.tokens, args.sample_cap, args.states)
    return estimate_layers(spec, str(text), settings=settings, layers=args.layers, device=args.device,
                           batch_size=large_layers.BATCH_SIZE, data_dir=work / "data", mirror=mirror)  # fmt: skip


def compare(made: dict, run: dict) -> dict:
    """The estimate's seconds (encoding, measuring, total) and peak memory over the run's."""
    p = made["predicted"]
    measured = sum(run["layer_seconds"].values())
    ratios = {
        "encode": p["encode"] / run["encode_seconds"],
        "measure": p["measure"] / measured,
        "total": p["total"] / (run["encode_seconds"] + measured),
        "peak_memory": p["peak_memory_mb"] / run["peak_rss_mb"],
    }
    return {
        "run": {
            "encode_seconds": run["encode_seconds"],
            "measure_seconds": round(measured, 1),
            "peak_rss_mb": run["peak_rss_mb"],
            "n_points": run["n_points"],
            "points_kept": run["points_kept"],
        },  # fmt: skip
        "estimate": {
            "encode_seconds": round(p["encode"], 1),
            "measure_seconds": round(p["measure"], 1),
            "peak_memory_mb": p["peak_memory_mb"],
            "n_points": made["n_points"],
            "points_kept": made["points_kept"],
        },  # fmt: skip
        "predicted_over_measured": {k: round(v, 3) for k, v in ratios.items()},
        "within": {
            k: bool(abs(v - 1) <= WITHIN["memory" if k == "peak_memory" else "seconds"]) for k, v in ratios.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    why = "an estimate is of this machine"
    args, checked, provenance = large_layers.checking(__doc__.split("\n")[0], argv, why, mirror=False)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as work:
        made = estimate(checked_command(checked), args.mirror, Path(work))
    run = checked["results"][0]
    if (made["n_points"], made["points_kept"]) != (run["n_points"], run["points_kept"]):
        raise SystemExit(f"{args.check}: the estimate counted {made['n_points']} points, the run {run['n_points']}: "
                         "not the run's text or tokenizer")  # fmt: skip
    written = {
        "what": "python benchmarks/layer_estimate.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "provenance": provenance,
        "checked": {
            "file": str(args.check),
            "load_average": checked["load_average"],
            "code": checked["provenance"]["code"],
        },  # fmt: skip
        "estimate": made,
        "result": compare(made, run),
    }
    args.out.write_text(json.dumps(written, indent=1) + "\n")
    print(json.dumps(written["result"]["predicted_over_measured"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
