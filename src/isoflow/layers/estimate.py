"""A layer run's seconds and memory predicted on the machine at hand before it is made (``isoflow layers --estimate``):
the time formula of :mod:`isoflow.layers.timing` with each rate measured here, on the run's own model and corpus.

* **encoding**: the run's sentences (the same seeded sample the run takes) are tokenized into its batches to count
  the positions the forward passes will compute (:func:`isoflow.layers.encoder.padded_positions`: padding and special
  tokens included), and a few of its batches are encoded and timed (:func:`isoflow.layers.timing.time_encoding`): the
  run's positions at that rate. A short run of the model itself, because the share of the GEMM rate a forward pass
  reaches moved by a third between calibrations on small models (docs/performance.md, "The time formula");
* **each measured state**: the arithmetic :func:`isoflow.layers.work.expected` counts for the run's points, sample
  and sentences, at the rates :func:`calibrate_parts` measures on random points at the model's width (at most
  :data:`PART_POINTS` of them, one K-means sample and start: a state measured as the run measures it, whose rate a
  multiply-add the counts carry to the run's sample and fits), the Lloyd iterations of a fit at :data:`LLOYD_ITERATIONS`
  (random points converge in half the iterations real text takes);
* **memory and disk**: :func:`isoflow.layers.cost.peak_memory` and :func:`~isoflow.layers.cost.disk` of the run's
  shape as the run itself will check it (its types and batches counted on its sentences).

The estimate loads the model (as the run would, in its dtype and placement) and takes a few minutes for a 1B model on
2 CPU cores; it writes nothing.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from .. import corpora
from ..models.shapes import module_shape
from ..run_inputs import run_inputs
from .cost import disk, peak_memory
from .encoder import load_encoder, padded_positions
from .run import encoded_run_shape, sampled_sentences
from .settings import BATCH_SIZE, LayerSettings
from .store import available_memory
from .streamed import SharedSample
from .subset import check_spec, chosen_layers
from .timing import SHORT_POINTS, Kernels, fit_rates, predict, time_encoding

# The Lloyd iterations of one K-means fit on real text: MiniLM's states over 5,000 of Brown's tokens, the mean over its
# fits (benchmarks/results/layer-time.json, rates.iterations; tests/test_layer_timing.py reads it there). The 1B
# shape's random weights over Brown took 33.5 (the same file's result.lloyd_iterations_per_fit); random points, 19.
LLOYD_ITERATIONS = 38.9
PART_STATES = 2  # random states measured for the parts' rates (the first pays one-off costs the second does not)
PART_POINTS = 5000  # at most this many random points a state (the 1B shape's 2,048 dimensions: about 30 s a state)


def calibrate_parts(dim: int, points: int, sentences: int, settings: LayerSettings, *, states: int = PART_STATES,
                    seed: int = 0, device: str = "cpu") -> dict:  # fmt: skip
    """A calibration record (as a run's ``meta.json`` has it: settings, work, seconds, points, sentences, width) of
    ``states`` states of ``points`` random points in ``dim`` dimensions, with ``sentences`` sentences' first positions
    among them and 4,000 types, each measured as a layer run measures a state
    (:func:`isoflow.layers.measure.layer_metrics`, on ``device``, where a run measures) at ``settings``' K decision:
    the parts' rates at a run's width and sample (:func:`isoflow.layers.timing.fit_rates`)."""
    import torch

    from .measure import layer_metrics

    settings = replace(settings, max_tokens=points, sample_cap=min(settings.sample_cap, points), states="all",
                       kmeans_samples=1, kmeans_starts=1)  # fmt: skip
    rng = np.random.default_rng(seed)
    types = rng.integers(0, 4000, points).astype(str)
    positions = np.arange(points) % max(1, round(points / max(sentences, 1)))
    work, seconds = {}, {}
    for state in range(states):
        x = torch.from_numpy(rng.standard_normal((points, dim), dtype=np.float32)).to(device)
        start = time.perf_counter()
        _, extra = layer_metrics(x, types, settings, positions=positions)
        seconds[f"layer{state}"] = time.perf_counter() - start
        work[f"layer{state}"] = extra["work"]
    return {"settings": settings.dict(), "work": work, "seconds": seconds, "n_points": points,
            "sentences_used": int((positions == 0).sum()), "dim": dim}  # fmt: skip


def estimate_layers(
    model,
    corpus: str,
    *,
    settings: LayerSettings = LayerSettings(),
    types: str = "tokens",
    layers: str | None = None,
    device: str = "auto",
    batch_size: int = BATCH_SIZE,
    data_dir="data",
    raw_dir=None,
    mirror=None,
    short_points: int = SHORT_POINTS,
    progress: bool = True,
) -> dict:
    """The seconds, memory and disk of :func:`isoflow.layers.run.run_layers` with these arguments (the same meanings),
    predicted here (module docstring): the run's counts (points, kept points, sentences, positions, types), the short
    run, the kernels and rates measured, and ``predicted`` — ``encode``, ``measure``, ``total`` seconds, a ``state``'s
    and its parts', ``peak_memory_mb`` and ``disk_mb`` —, the memory this machine has available now
    (``available_memory_mb``; None where it cannot tell) and the seconds the estimate itself took."""
    if types != "tokens":  # before anything loads
        raise ValueError(f"--estimate predicts runs of token points (--types tokens); got --types {types}")
    check_spec(layers)
    started = time.perf_counter()
    say = (lambda text: print(f"estimate: {text}", file=sys.stderr, flush=True)) if progress else (lambda text: None)
    inputs = run_inputs(device=device, model=model, data_dir=data_dir, raw_dir=raw_dir, mirror=mirror)
    name = inputs.model.name
    sentences = corpora.load(corpus, inputs.cache, mirror)
    encoder = load_encoder(inputs.model, inputs.device)
    measured = len(chosen_layers(layers, encoder.n_states))
    chosen, n_points = sampled_sentences(encoder, sentences, settings, types, name)
    positions = padded_positions(encoder, chosen, batch_size=batch_size)
    kept = n_points if settings.states == "all" else len(SharedSample.of(n_points, settings).rows)
    shape = encoded_run_shape(encoder, chosen, settings, types, batch_size, measured=measured, n_points=n_points,
                              kept=kept)  # fmt: skip
    available = available_memory()  # with the model loaded, as the run checks it
    say(f"{name}: {n_points:,} points of {len(chosen):,} sentences, {positions:,} positions computed; timing "
        f"{short_points:,} points of encoding")  # fmt: skip
    short = time_encoding(encoder, chosen, batch_size=batch_size, points=short_points)
    dtype = str(next(encoder.model.parameters()).dtype).removeprefix("torch.")
    model_shape = module_shape(encoder.model, encoder.dim, encoder.n_states)
    del encoder  # the weights, before the parts' random states take their memory
    say(f"encoding at {short.positions / short.seconds:.1f} positions/s; timing the kernels and two states at "
        f"{model_shape.dim} dimensions")  # fmt: skip
    kernels = Kernels.measured(model_shape.dim, ("float32", "float64", dtype), device=str(inputs.device))
    points = min(kept, PART_POINTS)
    parts = calibrate_parts(model_shape.dim, points, round(len(chosen) * points / n_points), settings,
                            device=str(inputs.device))  # fmt: skip
    # the encoding's share of the GEMM rate, as the short run reached it (the prediction reads its seconds directly)
    share = model_shape.multiplied * short.positions / short.seconds / kernels.gemm[dtype]
    rates = replace(fit_rates(parts, model_shape, kernels, encoding=(share, 0.0)), iterations=LLOYD_ITERATIONS)
    seconds = predict(model_shape, settings, rates, kernels, points=n_points, dtype=dtype, kept=kept,
                      sentences=len(chosen), measured=measured, positions=positions, short=short)  # fmt: skip
    return {
        "model": name,
        "corpus": corpora.corpus_name(corpus),
        "device": str(inputs.device),
        "dtype": dtype,
        "parameters": model_shape.parameters,
        "dim": model_shape.dim,
        "states_measured": measured,
        "n_points": n_points,
        "points_kept": kept,
        "sentences": len(chosen),
        "positions": positions,
        "n_types": shape.types,
        "short_run": {"positions": short.positions, "points": short.points, "seconds": short.seconds},
        "kernels": {"gemm": kernels.gemm, "eigvalsh": kernels.eigvalsh, "eigh": kernels.eigh},
        "rates": {k: v for k, v in rates.as_dict().items() if k != "kernels"},
        "predicted": {
            **seconds,
            "peak_memory_mb": round(peak_memory(shape)["peak"] / 2**20, 1),
            "disk_mb": round(disk(shape) / 2**20, 3),
        },
        "available_memory_mb": None if available is None else round(available / 2**20, 1),
        "estimate_seconds": round(time.perf_counter() - started, 1),
    }
