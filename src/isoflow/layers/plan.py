"""A layer run's resources, planned before anything is loaded: what a workflow asks a scheduler for (a job's
``mem_mb``, ``disk_mb`` and ``runtime``), from the model's shape (:mod:`isoflow.models.shapes`) and the run's
settings (:class:`~isoflow.layers.settings.LayerSettings`).

* **memory**: the peak :func:`isoflow.layers.cost.peak_memory` predicts, times :data:`MEMORY_MARGIN` — the largest
  measured peak over predicted peak, of the published runs and the memory benchmarks (docs/performance.md);
* **disk**: the store (:func:`isoflow.layers.cost.disk`), times :data:`DISK_MARGIN` (the run's own small files);
* **time**: encoding, 2 · parameters FLOPs a point at :data:`ENCODE_FLOPS_PER_SECOND`, and each measured state
  :data:`LAYER_SECONDS` + :data:`MEASURE_SECONDS_PER_UNIT` · S · max(S, 20,000) · d (S the K-means sample: the
  distances of LID and the silhouettes grow as S², K-means as S; below the published runs' 20,000 points every term is
  taken as linear, an upper bound), scaled by the K-means fits the settings ask against the published runs' (up, and
  down: the large-model benchmarks, at one sample and one start, took under half of it on a quiet machine and within
  the margin beside other jobs, tested); times
  :data:`TIME_MARGIN`. The rates are the slowest of the published layer runs (docs/results/layers/runs: 2 CPU cores;
  a state's average time, whose slowest single state took up to twice it on a shared machine), so that the request is
  a ceiling on such a machine, not a prediction; a GPU job finishes well inside it.

Before it encodes, the run itself checks the memory it will hold against what the machine has
(:func:`isoflow.layers.cost.check_memory`), with the corpus' real token and type counts.

Examples
--------
>>> from isoflow.layers.plan import planned_resources
>>> from isoflow.layers.settings import LayerSettings
>>> from isoflow.models.shapes import PUBLISHED
>>> planned_resources(PUBLISHED["minilm"], LayerSettings())
{'mem_mb': 3781, 'disk_mb': 1128, 'runtime': 69}
"""

from __future__ import annotations

import math

from ..models.shapes import ModelShape
from .cost import RunShape, disk, peak_memory
from .settings import BATCH_SIZE, LayerSettings
from .subset import chosen_layers

# The slowest encoding among the published layer runs: smollm2-135m over Brown (docs/results/layers/runs/smollm2-135m/
# brown/meta.json: 2 · 134,515,008 parameters · 100,007 points in 930.1 s); tests/test_layer_plan.py recomputes it
ENCODE_FLOPS_PER_SECOND = 28.9e9
# The slowest layers among them: mpnet's over Brown, 666.8 s a state on average at S = 20,000 and d = 768 (its
# meta.json), LAYER_SECONDS apart
MEASURE_SECONDS_PER_UNIT = 2.0e-9
CALIBRATION_SAMPLE = 20_000  # the published runs' sample_cap
PUBLISHED_KMEANS = 15 * 3 * 5  # their k_max · kmeans_samples · kmeans_starts
LAYER_SECONDS = 60  # a state's fixed cost: GloVe's one state of 50 dimensions took 44.4 s
# The largest measured peak over the formula's prediction (tested): mpnet's published layer run over Brown, 1.495 (a
# run with every state kept, made before the memory work); the benchmarks of benchmarks/results/large-layers-*.json
# are below it
MEMORY_MARGIN = 1.5
DISK_MARGIN = 1.1
TIME_MARGIN = 1.5
POINTS_PER_SENTENCE = 32  # a batch's points per sentence (English sentences average fewer tokens)
HEAPS = (30, 0.6)  # types ≤ 30 · tokens^0.6 (Heaps' law, above English text's): what a streamed run's type sums hold


def run_shape(
    model: ModelShape, settings: LayerSettings, *, dtype: str = "auto", layers: str | None = None
) -> RunShape:
    """The run's shape (:class:`~isoflow.layers.cost.RunShape`) as planned: the states ``layers`` names measured (every
    state by default; ``isoflow layers --layers``), ``max_tokens`` points, the samples' union kept (``states:
    sample``) or every point, and the types Heaps' law allows."""
    points = settings.max_tokens
    kept = points if settings.states == "all" else min(points, settings.kmeans_samples * settings.sample_cap)
    return RunShape.at(
        settings,
        weight_bytes=model.weight_bytes(dtype),
        dim=model.dim,
        states=model.states,
        measured=len(chosen_layers(layers, model.states)),
        points=points,
        types=min(points, math.ceil(HEAPS[0] * points ** HEAPS[1])),
        kept=kept,
        batch_points=BATCH_SIZE * POINTS_PER_SENTENCE,
    )


def run_seconds(model: ModelShape, settings: LayerSettings, *, layers: str | None = None) -> float:
    """The run's seconds at the published runs' slowest rates (module docstring): encoding, then each state measured
    (every state, or those ``layers`` names)."""
    sample = min(settings.sample_cap, settings.max_tokens)
    kmeans = settings.k_max * settings.kmeans_samples * settings.kmeans_starts / PUBLISHED_KMEANS
    measure = MEASURE_SECONDS_PER_UNIT * sample * max(sample, CALIBRATION_SAMPLE) * model.dim * kmeans
    encode = 2 * model.parameters * settings.max_tokens / ENCODE_FLOPS_PER_SECOND
    return encode + len(chosen_layers(layers, model.states)) * (LAYER_SECONDS + measure)


# What a job asks for when its model's shape cannot be known before it runs (a hub id not cached, a folder that does
# not exist yet and no settings to say its size): the rules' fixed request before the plan existed
UNPLANNED = {"mem_mb": 8000, "disk_mb": 10_000, "runtime": 240}


def job_resources(
    model: ModelShape | None, settings: LayerSettings, *, dtype: str = "auto", layers: str | None = None
) -> dict[str, int]:
    """:func:`planned_resources` of a known shape, else :data:`UNPLANNED`."""
    return dict(UNPLANNED) if model is None else planned_resources(model, settings, dtype=dtype, layers=layers)


def planned_resources(
    model: ModelShape, settings: LayerSettings, *, dtype: str = "auto", layers: str | None = None
) -> dict[str, int]:
    """A job's ``mem_mb``, ``disk_mb`` (MiB) and ``runtime`` (minutes), each with its margin (module docstring), for
    the weights in ``dtype`` and the states ``layers`` names (every state by default)."""
    shape = run_shape(model, settings, dtype=dtype, layers=layers)
    return {
        "mem_mb": math.ceil(peak_memory(shape)["peak"] * MEMORY_MARGIN / 2**20),
        "disk_mb": math.ceil(disk(shape) * DISK_MARGIN / 2**20),
        "runtime": math.ceil(run_seconds(model, settings, layers=layers) * TIME_MARGIN / 60),
    }
