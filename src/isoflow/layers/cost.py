"""What a layer analysis will hold: its peak resident memory and its disk, from the model's shape and the run's
settings (issue "Every layer of a 1B–8B model in bounded memory", item 3), so that a run that would not fit says so
before it encodes (:func:`check_memory`, called once the weights are loaded and the corpus sample counted).

The run's resident memory is the runtime's (Python, torch, transformers: :data:`RUNTIME_BYTES`, measured), the weights
(mapped from their file: every page at most) and the largest of its stages' own (L measured states of d dimensions;
N points, T types, S points kept, P pair points, B points in one batch):

* **encoding** — a run keeping its sample (``states: sample``) holds each measured state's two d × d float64
  scatters, L · 2 · 8d², its types' sums of unit rows being on disk (T × d float64 a state, beside the store: one
  state's rows for one batch's types read, added to and written back at a time, B · 16d); the store's pages as it
  writes them (L · S · 4d); and one batch's states: every state's points in float32 and a measured state's in
  float64 twice (the points and their unit rows), B · d · (4 · states + 16);
* **measuring a layer** — its kept points in float32 and in float64, S · 12d, and the K-means, LID and silhouette
  blocks over one K-means sample of them (:data:`BLOCK_ROWS` rows × that sample's points in float64, a few at
  once), with the store's pages of every kept point mapped (L · S · 4d), the layer's types' sums read whole (T · 8d)
  — the scatters of the layers not yet measured still held;
* **CKA between layers** — every measured state's P pair points in float32 and two of them centred: (L + 2) · P · 4d.

The disk is the store, L · S · 4d bytes (``states: all``: S = N), and a run keeping its sample's types' sums,
L · T · 8d.

Examples
--------
>>> from isoflow.layers.cost import RunShape, peak_memory
>>> shape = RunShape(weight_bytes=2_471_628_800, dim=2048, states=17, measured=17, points=20_000, types=400,
...                  kept=5_000, pair_points=5_000, batch_points=800)
>>> round(peak_memory(shape)["peak"] / 2**20)  # MiB
5116
"""

from __future__ import annotations

from dataclasses import dataclass

from .store import states_bytes

# Python, torch, transformers and isoflow loaded, rounded up: 346.8 MiB allocated (RssAnon at the "load" stage, the
# weights being mapped file pages) and 129.9 MiB of mapped libraries (RssFile at "start") in
# benchmarks/results/large-layers-1b-sample.json
RUNTIME_BYTES = 500 * 2**20
TYPE_BLOCK = 1024  # types' sums held in memory (a run without a store folder) grow by blocks of this many types
BLOCK_ROWS = 1024  # rows of the distance blocks a layer's measures make at once (K-means, LID, silhouettes)
FLOAT32, FLOAT64 = 4, 8


@dataclass(frozen=True)
class RunShape:
    """What sets a layer run's memory and disk: the weights' bytes as loaded, the model's width and hidden states,
    the states measured, the points (all, kept, pair sample, one batch's) and the types."""

    weight_bytes: int
    dim: int
    states: int
    measured: int
    points: int
    types: int
    kept: int
    pair_points: int
    batch_points: int
    streamed: bool = True  # states: sample (the sums held while encoding); all: no sums, every point stored
    sample: int | None = None  # the points of one K-means sample, over which the distance blocks run (None: kept)

    @classmethod
    def at(cls, settings, **counts) -> RunShape:
        """The shape of a run at ``settings`` (a :class:`~isoflow.layers.LayerSettings`: its pair sample, what it keeps,
        its K-means sample's cap) with its ``counts`` (weight_bytes, dim, states, measured, points, types, kept,
        batch_points), which the plan, the run and the benchmark each take from what they have."""
        points = counts["points"]
        stored = {"streamed": settings.states == "sample", "sample": min(settings.sample_cap, points)}
        return cls(pair_points=settings.pair_points, **stored, **counts)


def memory_terms(shape: RunShape) -> dict[str, int]:
    """Each term of the run's memory in bytes (module docstring): every measured state's ``scatters``; one batch's
    states (``batch``) and its types' rows (``batch_types``); the ``store_pages``; a layer's points and distance blocks
    (``layer``) and its types' sums (``layer_types``); the layer-by-layer ``cka``. What sums a run keeping every point
    does not hold are 0."""
    d, L, S, B = shape.dim, shape.measured, shape.kept, shape.batch_points
    sums = int(shape.streamed)  # a run keeping every point folds nothing into sums
    return {
        "scatters": sums * L * 2 * FLOAT64 * d * d,
        "batch": B * d * (FLOAT32 * shape.states + 2 * FLOAT64),
        "batch_types": sums * B * 2 * FLOAT64 * d,
        "store_pages": store_bytes(shape),
        "layer": S * (FLOAT32 + FLOAT64) * d + 3 * BLOCK_ROWS * min(S, shape.sample or S) * FLOAT64,
        "layer_types": sums * shape.types * FLOAT64 * d,
        "cka": (L + 2) * min(shape.pair_points, shape.points) * FLOAT32 * d,
    }


def peak_memory(shape: RunShape) -> dict[str, int]:
    """Each part of the run's resident memory in bytes (module docstring), and ``peak``: the runtime, the weights and
    the largest stage."""
    t = memory_terms(shape)
    stages = {
        "encoding": t["scatters"] + t["store_pages"] + t["batch"] + t["batch_types"],
        "measuring": t["scatters"] + t["store_pages"] + t["layer"] + t["layer_types"],
        "cka": t["store_pages"] + t["cka"],
    }
    return {
        "runtime": RUNTIME_BYTES,
        "weights": shape.weight_bytes,
        **{f"stage_{name}": value for name, value in stages.items()},
        "peak": RUNTIME_BYTES + shape.weight_bytes + max(stages.values()),
    }


def store_bytes(shape: RunShape) -> int:
    """The store's bytes: every measured state's kept points in float32 (:func:`isoflow.layers.store.states_bytes`)."""
    return states_bytes(shape.measured, shape.kept, shape.dim)


def type_sums_bytes(shape: RunShape) -> int:
    """A run keeping its sample's types' sums on disk beside the store: float64, T × d a measured state (0 for a run
    keeping every point)."""
    return shape.measured * shape.types * FLOAT64 * shape.dim if shape.streamed else 0


def disk(shape: RunShape) -> int:
    """The run's bytes on disk: the store and its types' sums."""
    return store_bytes(shape) + type_sums_bytes(shape)


def check_memory(shape: RunShape, available: int | None) -> None:
    """Refuse, in one line, a run whose predicted peak (:func:`peak_memory`) exceeds the ``available`` bytes (None:
    unknown, not checked)."""
    from .store import NotEnoughSpace

    peak = peak_memory(shape)["peak"]
    if available is not None and peak > available:
        raise NotEnoughSpace(
            f"this layer run would hold about {peak / 1e9:.1f} GB (isoflow.layers.cost: weights "
            f"{shape.weight_bytes / 1e9:.1f} GB, {shape.measured} states of {shape.dim}, {shape.points:,} points), "
            f"{available / 1e9:.1f} GB is available; keep only the samples' points (--states sample), load the weights "
            "in bfloat16 (--dtype bfloat16), measure fewer layers (--layers) or fewer tokens (--max-tokens)"
        )


def check_weights(weight_bytes: int, available: int | None, *, model: str, dtype: str) -> None:
    """Refuse, in one line and before anything loads, a model whose weights alone (with the runtime) exceed the
    ``available`` bytes (None: unknown, not checked); the whole run is checked once its points are counted."""
    from .store import NotEnoughSpace

    need = RUNTIME_BYTES + weight_bytes
    if available is not None and need > available:
        raise NotEnoughSpace(
            f"{model}: its weights alone take {weight_bytes / 1e9:.1f} GB as loaded ({dtype}), with the runtime "
            f"{need / 1e9:.1f} GB, and {available / 1e9:.1f} GB is available; load them in bfloat16 (--dtype "
            "bfloat16), or run on a machine with more memory or on a GPU (--device cuda)"
        )
