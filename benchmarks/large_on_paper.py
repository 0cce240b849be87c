"""On paper, not run: what `isoflow layers --states sample --dtype bfloat16` would hold and write for the Llama-3.2-1B,
Llama-3.1-8B and Llama-3.1-70B shapes over 100,000 tokens at a 5,000-point sample, every state or every fourth and the
last (issue "Every layer of a 1B–8B model in bounded memory", item 3: extrapolated to 8B and 70B on one H100).

Host memory and disk are isoflow.layers.cost's formula (measured on the 1B shape on this machine:
docs/performance.md), the types Heaps' bound the plan uses (isoflow.layers.plan.HEAPS). GPU memory is this script's
sum of what a GPU run puts on the device — the weights, every measured state's two d × d float64 scatters (the sums
fold in where the states are), one batch's states in float32 and a layer's measuring (its kept points in float32 and
float64, the distance blocks) — never measured (no GPU has been lent since the code changed). The encoding's floor
is 2 · parameters FLOPs a token at the H100's dense bf16 rate: a bound, not a prediction.

    cd benchmarks && python large_on_paper.py --out results/large-on-paper.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import model_shapes

SHAPES = ("llama-3.2-1b", "llama-3.1-8b", "llama-3.1-70b")
SUBSETS = (None, "::4,-1")  # every state; every fourth and the last (isoflow layers --layers)
TOKENS, SAMPLE = 100_000, 5_000
H100_BYTES = 81_559 * 2**20  # an H100 80 GB as nvidia-smi reports it
H100_BF16_FLOPS = 989e12  # dense bf16 tensor-core peak (NVIDIA's H100 SXM datasheet)


def settings():
    from isoflow.layers import LayerSettings

    return LayerSettings(max_tokens=TOKENS, sample_cap=SAMPLE, kmeans_samples=1, kmeans_starts=1, states="sample")


def gpu_bytes(shape) -> int:
    """What a GPU run of ``shape`` (a :class:`isoflow.layers.cost.RunShape`) holds on the device (module docstring):
    the formula's terms that live where the states are (the types' sums go to the host's disk, the store to its)."""
    from isoflow.layers.cost import memory_terms

    terms = memory_terms(shape)
    return shape.weight_bytes + terms["scatters"] + max(terms["batch"], terms["layer"])


def row(name: str, layers: str | None) -> dict:
    from isoflow.layers import plan
    from isoflow.layers.cost import disk, memory_terms, peak_memory
    from isoflow.models.shapes import ModelShape

    family = model_shapes.config(name)
    model = ModelShape(model_shapes.PUBLISHED_PARAMETERS[name], family.hidden_size, family.num_hidden_layers + 1, 2)
    shape = plan.run_shape(model, settings(), dtype="bfloat16", layers=layers)
    gpu, scatters = gpu_bytes(shape), memory_terms(shape)["scatters"]
    return {
        "shape": name,
        "layers": layers or "all",
        "parameters": model.parameters,
        "dim": model.dim,
        "states": model.states,
        "measured": shape.measured,
        "types_planned": shape.types,
        "weights_gb": round(shape.weight_bytes / 1e9, 1),
        "scatters_gb": round(scatters / 1e9, 1),
        "host_peak_gb": round(peak_memory(shape)["peak"] / 1e9, 1),
        "disk_gb": round(disk(shape) / 1e9, 1),
        "gpu_gb": round(gpu / 1e9, 1),
        # H100s its weights and the rest need, the weights sharded across them (device_map="auto")
        "h100s": math.ceil(gpu / H100_BYTES),
        "encode_floor_s": round(2 * model.parameters * TOKENS / H100_BF16_FLOPS, 1),
    }


def table() -> list[dict]:
    return [row(name, layers) for name in SHAPES for layers in SUBSETS]


# The columns docs/performance.md shows (its table is this one: a test holds them together)
SHOWN = ("shape", "layers", "measured", "weights_gb", "scatters_gb", "host_peak_gb", "disk_gb", "gpu_gb", "h100s",
         "encode_floor_s")  # fmt: skip


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(SHOWN) + " |", "|" + "---|" * len(SHOWN)]
    return "\n".join(lines + ["| " + " | ".join(str(r[k]) for k in SHOWN) + " |" for r in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = parser.parse_args(argv)
    rows = table()
    what = "cd benchmarks && python large_on_paper.py --out results/large-on-paper.json"
    args.out.write_text(json.dumps({"what": what, "results": rows}, indent=1) + "\n")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
