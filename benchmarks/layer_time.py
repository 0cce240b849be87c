"""Benchmark: the layer run's time formula (isoflow.layers.timing) against a timed run. It calibrates on this
machine — the encoding's two rates from MiniLM's encoding of 5,000 of Brown's tokens (an `isoflow layers` run keeping
every point, one K-means sample and start) and the SmolLM2-135M and Qwen2.5-0.5B shapes' random weights (float32)
encoding 8,000 and 4,000 of them; the parts' rates from two states of random points at the checked run's width and
sample, measured as a layer run measures a state; the Lloyd iterations of a fit from MiniLM's run (real text); the
kernels (GEMM rates, eigen solves) at each width; and the checked shape's own random weights over 2,000 tokens — then
predicts the run a `benchmarks/large_layers.py` JSON records (made on the same machine, quiet), and writes both,
part by part:

    python benchmarks/large_layers.py --shape llama-3.2-1b --dtype bfloat16 --tokens 20000 --sample-cap 5000 \\
        --states sample --corpus brown --mirror ../shared/data --out results/large-layers-1b-time.json
    python benchmarks/layer_time.py --check results/large-layers-1b-time.json --mirror ../shared/data \\
        --out results/layer-time.json

Two predictions of the measuring: from the run's own counts (each layer's recorded arithmetic, its Lloyd iterations
included: the formula's rates checked), and from the shape alone at the calibration's Lloyd iterations (the plan).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import large_layers
import model_shapes

ROOT = Path(__file__).resolve().parent.parent
CALIBRATION = dict(max_tokens=5000, kmeans_samples=1, kmeans_starts=1)  # MiniLM over Brown: about 40 s on 2 cores
# The encoding's calibrations beside MiniLM's: random weights of these shapes (float32), each over these tokens — a
# minute or so each, building the weights included; at 1,000 tokens (two batches) Qwen's first batch's one-off costs
# moved its rate by 30 % between two runs
WIDER = (("smollm2-135m", 8000), ("qwen2.5-0.5b", 4000))
# The checked shape's own random weights in its dtype over these tokens (three batches of Brown's sentences; the 1B
# shape in bf16: about four minutes on 2 cores): the encoding's rate at the shape itself, beside the formula's
SHORT_TOKENS = 2000
WITHIN = 0.25  # the bound on time


def calibrate(mirror: Path, work: Path) -> dict:
    """The calibration run's record (meta.json), made here."""
    from isoflow.layers import LayerSettings
    from isoflow.layers.run import run_layers

    out = run_layers("minilm", "brown", settings=LayerSettings(**CALIBRATION), out=work / "calibration",
                     data_dir=work / "data", mirror=mirror, device="cpu", progress=False)  # fmt: skip
    return json.loads((out / "meta.json").read_text())


def at_width(dim: int, points: int, sentences: int) -> dict:
    """The parts' calibration record at the checked run's width and sample (isoflow.layers.estimate.calibrate_parts:
    two states of random points, one K-means sample and start), where MiniLM's are at 384 and 5,011 points."""
    from isoflow.layers import LayerSettings
    from isoflow.layers.estimate import calibrate_parts

    return calibrate_parts(dim, points, sentences, LayerSettings(sample_cap=points))


def shape_of(name: str):
    """A benchmark shape's ModelShape: its base model (what `isoflow layers` runs) built on the meta device, its
    parameters, width, states and embeddings (the parameters no point is multiplied by) counted there
    (isoflow.models.shapes.module_shape)."""
    import torch
    from transformers import AutoModel

    from isoflow.models.shapes import module_shape

    config = model_shapes.config(name)
    with torch.device("meta"):
        base = AutoModel.from_config(config)
    return module_shape(base, config.hidden_size, config.num_hidden_layers + 1)


def compare(run: dict, rates, kernels, short: dict, sentences: int) -> dict:
    """The checked run's encoding and measuring seconds beside the formula's: from its own counts, and planned; its
    encoding also at the rate of a ``short`` run of its shape (its record from benchmarks/large_layers.py);
    ``sentences``: those its points came from."""
    from isoflow.layers.settings import LayerSettings
    from isoflow.layers.timing import PART_DTYPE, part_seconds, predict
    from isoflow.layers.work import expected

    model = shape_of(run["shape"])
    assert model.parameters == run["parameters"], "the benchmark's shape is the run's"
    settings = LayerSettings(max_tokens=run["n_points"], sample_cap=run["points_kept"], kmeans_samples=1,
                             kmeans_starts=1, states=run["states"])  # fmt: skip
    streamed = run["states"] == "sample"
    planned = predict(model, settings, rates, kernels, points=run["n_points"], dtype=run["loaded_dtype"],
                      kept=run["points_kept"], sentences=sentences)  # fmt: skip
    # the short run's seconds a point, all of it taken as the weights' products: its own fraction of the GEMM rate
    share = model.multiplied * short["n_points"] / short["encode_seconds"] / kernels.gemm[run["loaded_dtype"]]
    at_shape = predict(model, settings, replace(rates, encode=share, encode_overhead=0.0), kernels,
                       points=run["n_points"], dtype=run["loaded_dtype"], kept=run["points_kept"],
                       sentences=sentences)  # fmt: skip
    layers = []
    for name, counts in run["work"].items():
        parts = part_seconds(counts, rates, kernels, streamed=streamed)
        own = sum(parts.values())
        took = run["layer_seconds"][name]
        timed = {part: round(counts.get(f"seconds_{part}", 0.0), 2) for part in PART_DTYPE}
        layers.append({"layer": name, "seconds": took, "from_counts": round(own, 2),
                       "counts_over_seconds": round(own / took, 3), "planned": round(planned["state"], 2),
                       **{f"{part}_seconds": value for part, value in timed.items()},
                       "rest_seconds": round(took - sum(timed.values()), 2),
                       **{f"{part}_from_counts": round(value, 2) for part, value in parts.items()},
                       "lloyd_iterations": counts["lloyd_iterations"]})  # fmt: skip
    measured = sum(r["seconds"] for r in layers)
    from_counts = sum(r["from_counts"] for r in layers)
    n = run["points_kept"]
    fits = expected(n, model.dim, settings, past_first=n - round(sentences * n / run["n_points"]), iterations=1)
    iterations = sum(r["lloyd_iterations"] for r in layers)
    ratios = {
        "encode": planned["encode"] / run["encode_seconds"],
        "encode_at_shape": at_shape["encode"] / run["encode_seconds"],
        "measure_from_counts": from_counts / measured,
        "measure_planned": planned["measure"] / measured,
    }
    return {
        "model": {
            "shape": run["shape"],
            "parameters": model.parameters,
            "embeddings": model.embeddings,
            "multiplied": model.multiplied,
            "dim": model.dim,
            "states": model.states,
            "dtype": run["loaded_dtype"],
        },  # fmt: skip
        "n_points": run["n_points"],
        "points_kept": n,
        "sentences": sentences,
        "encode_seconds": run["encode_seconds"],
        "encode_predicted": round(planned["encode"], 1),
        "encode_at_shape": round(at_shape["encode"], 1),
        "short_run": {
            "n_points": short["n_points"],
            "encode_seconds": short["encode_seconds"],
            "share_of_gemm_rate": round(share, 3),
        },  # fmt: skip
        "encode_scatters_predicted": round(planned["encode_scatters"], 1),
        "measure_seconds": round(measured, 1),
        "measure_from_counts": round(from_counts, 1),
        "measure_planned": round(planned["measure"], 1),
        "planned_state": {k.removeprefix("state_"): round(v, 2) for k, v in planned.items() if k.startswith("state")},
        "predicted_over_measured": {k: round(v, 3) for k, v in ratios.items()},
        "within": {k: bool(abs(v - 1) <= WITHIN) for k, v in ratios.items()},
        "lloyd_iterations_per_fit": round(iterations / (len(layers) * fits["lloyd_iterations"]), 1),
        "layers": layers,
    }


def sentences_of(run: dict) -> int:
    """The sentences a run's points came from, where its record does not say (benchmarks/large_layers.py before it
    did): read back from its first layer's silhouette products, (m² + m'²) · d for its K decision's sample of m kept
    points and the m' of them past their sentence's first position, m'/m being the share of points past the first."""
    first = next(iter(run["work"].values()))
    m = min(run["points_kept"], run["n_points"])
    past = (first["silhouette_products"] / run["dim"] - m * m) ** 0.5
    return round(run["n_points"] * (1 - past / m))


def main(argv: list[str] | None = None) -> int:
    from isoflow.layers.timing import Kernels, fit_encoding, fit_rates
    from isoflow.models.shapes import PUBLISHED

    description, why = __doc__.split("\n")[0], "the formula's rates are this machine's"
    args, run, provenance = large_layers.checking(description, argv, why)
    checked = run["results"][0]
    load_before = os.getloadavg()
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        meta = calibrate(args.mirror, Path(work))
        brown = ("brown", args.mirror)
        wider = {}
        for name, tokens in WIDER:
            (Path(work) / name).mkdir()
            wider[name] = large_layers.measure(name, "float32", "cpu", tokens, tokens, Path(work) / name, "all",
                                               layers="0", corpus=brown)  # fmt: skip
        (Path(work) / "short").mkdir()
        short = large_layers.measure(checked["shape"], checked["loaded_dtype"], "cpu", SHORT_TOKENS, SHORT_TOKENS,
                                     Path(work) / "short", "all", layers="0", corpus=brown)  # fmt: skip
    calibration_seconds = time.perf_counter() - t
    minilm = PUBLISHED["minilm"]
    shapes = {name: shape_of(name) for name in wider}
    kernels = {d: Kernels.measured(d) for d in {minilm.dim, *(s.dim for s in shapes.values())}}
    kernels[checked["dim"]] = Kernels.measured(checked["dim"], ("float32", "float64", checked["loaded_dtype"]))
    encoding = fit_encoding([
        (meta["seconds"]["encode"] / meta["n_points"], minilm, kernels[minilm.dim].gemm["float32"]),
        *((run["encode_seconds"] / run["n_points"], shapes[name], kernels[shapes[name].dim].gemm["float32"])
          for name, run in wider.items()),
    ])  # fmt: skip
    # the parts' rates at the checked run's width and sample (random points), the Lloyd iterations of real text's
    sentences = checked.get("sentences_used") or sentences_of(checked)
    width = at_width(checked["dim"], checked["points_kept"],
                     round(checked["points_kept"] / checked["n_points"] * sentences))  # fmt: skip
    rates = replace(fit_rates(width, minilm, kernels[checked["dim"]], encoding=encoding),
                    iterations=fit_rates(meta, minilm, kernels[minilm.dim]).iterations)  # fmt: skip
    written = {
        "what": "python benchmarks/layer_time.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "provenance": provenance,
        "checked": {"file": str(args.check), "load_average": run["load_average"], "code": run["provenance"]["code"]},
        "calibration": {
            "settings": meta["settings"],
            "n_points": meta["n_points"],
            "seconds": meta["seconds"],
            "wall_seconds": round(calibration_seconds, 1),
            "work": meta["work"],
            "wider": [
                {"shape": name, "n_points": run["n_points"], "encode_seconds": run["encode_seconds"]}
                for name, run in wider.items()
            ],  # fmt: skip
        },  # fmt: skip
        "kernels": {d: k.__dict__ for d, k in kernels.items()},
        "at_width": {"seconds": width["seconds"], "work": width["work"]},
        "rates": rates.as_dict(),
        "result": compare(checked, rates, kernels[checked["dim"]], short, sentences),
    }
    args.out.write_text(json.dumps(written, indent=1) + "\n")
    print(json.dumps(written["result"]["predicted_over_measured"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
