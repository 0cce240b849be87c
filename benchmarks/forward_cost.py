"""A forward pass's fixed cost, in positions: what `isoflow.layers.encoder.FORWARD_POSITIONS` rests on.

`isoflow layers` splits a batch into passes of similar lengths (`encoder.forward_groups`) only where a split saves more
positions than a pass costs on its own. That cost is read here: a model of a published shape, with random weights built
in code in the dtype asked for (benchmarks/model_shapes.py; the base model, as the layer analysis runs it, every
state returned), runs passes of several sizes (sentences × length, random token ids) and each pass's seconds, the
least of ``--repeats`` after a warm-up, are fitted as t = a · (positions + c): a, the seconds a position, and c, a
pass's fixed cost in positions. Writes JSON with the machine, the threads and the commit::

    python benchmarks/forward_cost.py --shape llama-3.2-1b --dtype bfloat16   # about 10 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_shapes  # noqa: E402

OUT = Path(__file__).parent / "results" / "forward-cost.json"
PASSES = ((1, 32), (4, 64), (8, 64), (16, 64), (32, 64))  # (sentences, length): 32 to 2,048 positions


def fixed_cost(positions, seconds) -> tuple[float, float]:
    """(a, c) of the line t = a · positions + a · c through the passes' seconds, fitted on relative errors (each pass
    weighted by 1/t): the seconds a position and a pass's fixed cost in positions.

    A pass's timing varies by a few per cent of its length, so an unweighted fit lets the longest pass's noise set the
    intercept: two runs of this benchmark on one machine (benchmarks/results/forward-cost-unweighted.json and the
    forward-cost.json before it in git) gave c = −12.5 and 10.3 positions from per-position costs at 2,048 positions 2 %
    apart, while the weighted fit gives 6.5 and 5.8 from the same rows — the short passes, where the fixed cost shows,
    count as much as the long ones.

    >>> a, c = fixed_cost([32, 256, 2048], [0.001 * (p + 10) for p in (32, 256, 2048)])
    >>> round(a, 6), round(c, 6)
    (0.001, 10.0)
    >>> passes = (32, 256, 512, 1024, 2048)   # a fixed cost of 6 positions, the longest pass 2 % slow
    >>> round(fixed_cost(passes, [0.001 * (p + 6) * (1.02 if p == 2048 else 1) for p in passes])[1], 1)
    5.8
    >>> slope, intercept = np.polyfit(passes, [0.001 * (p + 6) * (1.02 if p == 2048 else 1) for p in passes], 1)
    >>> round(float(intercept / slope), 1)   # unweighted: the long pass's 2 % hides the fixed cost
    -1.5
    """
    p, t = np.asarray(positions, float), np.asarray(seconds, float)
    slope, intercept = np.polyfit(p, t, 1, w=1 / t)  # polyfit's w multiplies the residuals: relative errors
    return float(slope), float(intercept / slope)


def measure(shape: str, dtype: str, passes, repeats: int) -> list[dict]:
    from transformers import AutoModel

    from isoflow.cpu_gemm import best_seconds

    torch.manual_seed(0)
    model = AutoModel.from_config(model_shapes.config(shape), dtype=getattr(torch, dtype)).eval()
    vocab = model.config.vocab_size
    rows = []
    for sentences, length in passes:
        inputs = {"input_ids": torch.randint(0, vocab, (sentences, length))}
        inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
        with torch.inference_mode():
            seconds = best_seconds(functools.partial(model, **inputs, output_hidden_states=True), repeats)
        positions = sentences * length
        rows.append({"sentences": sentences, "length": length, "positions": positions, "seconds": seconds,
                     "ms_per_position": 1000 * seconds / positions})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    from isoflow.atomic import write_json
    from isoflow.records import run_provenance

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="llama-3.2-1b", choices=sorted(model_shapes.SHAPES))
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of each size after a warm-up (the least)")
    parser.add_argument("--tiny", action="store_true", help="the tiny shape's two smallest passes, one repeat (a test)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    shape, passes, repeats = ("tiny-llama", PASSES[:2], 1) if args.tiny else (args.shape, PASSES, args.repeats)
    provenance = run_provenance()  # the code as it is imported: a file edited while the passes run is not what ran
    rows = measure(shape, args.dtype, passes, repeats)
    a, c = fixed_cost([r["positions"] for r in rows], [r["seconds"] for r in rows])
    result = {
        "what": __doc__.splitlines()[0],
        "shape": shape,
        "dtype": args.dtype,
        "repeats": repeats,
        "provenance": provenance,
        "rows": rows,
        "fit": {"ms_per_position": 1000 * a, "fixed_cost_positions": c},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, result)  # whole or not at all: an interrupted run leaves the last result standing
    print(f"wrote {args.out}: {1000 * a:.2f} ms a position, a pass's fixed cost {c:.1f} positions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
