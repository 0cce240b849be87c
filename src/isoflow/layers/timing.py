"""A layer run's seconds, predicted from its arithmetic and what one machine does at each part (issue "Every layer
of a 1B–8B model in bounded memory", item 3; docs/performance.md, "The time formula").

* **Encoding**, a computed position's seconds — the forward passes compute every sentence of a batch at its
  longest one's length (:func:`isoflow.layers.encoder.padded_positions`; a run's ``positions_computed``) —: its
  multiplied parameters (:attr:`ModelShape.multiplied <isoflow.models.shapes.ModelShape.multiplied>`: all but the
  embeddings, which are read by index), one multiply-add each, at :attr:`Rates.encode` of the machine's GEMM rate in
  the weights' dtype at the model's width, and :attr:`Rates.encode_overhead` seconds beside them (tokenizing,
  batching, taking the states out: work that the weights' size does not set); or, measured at the model's own shape,
  a short run's seconds a position (:class:`ShortRun`, :func:`time_encoding`). A run keeping its sample (``states:
  sample``) also folds every
  point into each measured state's two d × d float64 scatters, 2 · N · d² multiply-adds a state, at the float64
  GEMM rate.
* **A measured state**: the counts of :func:`isoflow.layers.work.expected` — spectra, K decisions (K-means'
  point–centre products and the silhouettes' pair products, timed together), neighbour searches — each at its rate,
  carried from the calibration's width to the state's by the products' rates at both (:data:`PART_DTYPE`); the d × d
  eigen solves (:data:`SPECTRUM_EIGVALSH`, :data:`SUMS_EIGVALSH`, :data:`STATE_EIGH`)
  at their seconds at the state's width; and :attr:`Rates.state_seconds` beside them. The points a state is
  measured on are all of them, or, keeping the sample, the kept ones. The Lloyd iterations a fit takes are the one
  count the data set: a run's own (the formula checked against its arithmetic) or the calibration's mean (a plan).

The rates come from calibration runs on the machine the prediction is for (:func:`fit_rates`: one run keeping every
point for the parts; :func:`fit_encoding`: two models of different sizes for the encoding's two terms), the
kernels' rates at each width from :meth:`Kernels.measured`. ``python benchmarks/layer_time.py`` calibrates,
predicts a benchmark run of a large shape and writes both beside each other; :mod:`isoflow.layers.estimate` predicts
a user's run from a short run of its own model (``isoflow layers --estimate``).

Examples
--------
>>> from isoflow.models.shapes import PUBLISHED
>>> from isoflow.layers.settings import LayerSettings
>>> kernels = Kernels(384, {"float32": 1.4e11, "float64": 6e10, "scatter": 9e10}, eigvalsh=0.008, eigh=0.012)
>>> rates = Rates(encode=0.3, encode_overhead=2e-4, spectrum=1e10, k_decisions=2.5e10, neighbours=1.8e10,
...               state_seconds=0.8, iterations=35.0, kernels=kernels)
>>> s = predict(PUBLISHED["minilm"], LayerSettings(max_tokens=5000, kmeans_samples=1, kmeans_starts=1), rates,
...             kernels, points=5000, sentences=230)
>>> round(s["encode"], 2), round(s["state"], 2), round(s["measure"], 1)
(2.29, 3.54, 24.8)
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from ..models.shapes import ModelShape
from .settings import BATCH_SIZE, LayerSettings
from .work import expected

# The product each part's rate is carried across widths by: the spectra's, a scatter Xᵀ·X of float32 points in float64
# products (d × d out of SCATTER_ROWS × d, as isoflow.metrics.spectrum takes it); the distances', a float32 GEMM
PART_DTYPE = {"spectrum": "scatter", "k_decisions": "float32", "neighbours": "float32"}
GEMM_ROWS = 2048  # rows of the GEMM timed: about one batch's points (64 sentences of ~32 tokens)
SCATTER_ROWS = 5000  # rows of the scatter timed: a K-means sample's points
# A state's d × d eigenvalue solves (tests/test_layer_timing.py counts them in a run): the spectra of its points with
# and without the outlier dimensions and past the first positions, each centred and not (6, within the spectrum part);
# keeping a sample, the same three from the sums (6 more); and the principal axes' one eigenvector solve
SPECTRUM_EIGVALSH, SUMS_EIGVALSH, STATE_EIGH = 6, 6, 1


@dataclass(frozen=True)
class Kernels:
    """What one machine does at one width ``dim``: ``gemm`` multiply-adds a second by dtype (a (2,048 × d) · (d × 4d)
    product, a feed-forward layer's over one batch; ``scatter``: Xᵀ·X of 5,000 float32 points in float64 products, a
    spectrum's) and the seconds of one
    d × d float64 eigenvalue solve (``eigvalsh``) and eigenvector solve (``eigh``)."""

    dim: int
    gemm: dict
    eigvalsh: float
    eigh: float

    @classmethod
    def measured(cls, dim: int, dtypes=("float32", "float64"), device: str = "cpu", repeats: int = 3) -> Kernels:
        """Timed here: each the best of ``repeats`` after one to warm up (:func:`isoflow.cpu_gemm.best_seconds`)."""
        import torch

        from ..cpu_gemm import best_seconds

        def best(step) -> float:
            return best_seconds(step, repeats, device)

        gemm = {}
        for dtype in dict.fromkeys(("float64", *dtypes)):
            a = torch.randn(GEMM_ROWS, dim, dtype=getattr(torch, dtype), device=device)
            b = torch.randn(dim, 4 * dim, dtype=a.dtype, device=device)
            gemm[dtype] = GEMM_ROWS * dim * 4 * dim / best(lambda a=a, b=b: a @ b)
        from ..metrics.spectrum import float64_scatter

        points = torch.randn(SCATTER_ROWS, dim, device=device)
        gemm["scatter"] = SCATTER_ROWS * dim * dim / best(lambda: float64_scatter(points))
        x = torch.randn(3 * dim, dim, dtype=torch.float64, device=device)
        scatter = x.T @ x
        return cls(dim, gemm, best(lambda: torch.linalg.eigvalsh(scatter)), best(lambda: torch.linalg.eigh(scatter)))


@dataclass(frozen=True)
class Rates:
    """One machine's rates. The encoding: ``encode``, the forward pass's multiply-adds a second as a fraction of the
    GEMM rate in its dtype, and ``encode_overhead``, a point's seconds beside them. A state: ``spectrum``,
    ``k_decisions``, ``neighbours``, multiply-adds a second at the calibration's ``kernels``; ``state_seconds`` beside
    them and the eigen solves; ``iterations``, the Lloyd iterations of one K-means fit (mean)."""

    encode: float
    encode_overhead: float
    spectrum: float
    k_decisions: float
    neighbours: float
    state_seconds: float
    iterations: float
    kernels: Kernels

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ShortRun:
    """A few batches of a model's own encoding, timed: the ``positions`` its forward passes computed (padding and
    special tokens included), the ``points`` they gave and their ``seconds`` (the first batch, which pays one-off
    costs, left out)."""

    positions: int
    points: int
    seconds: float

    @property
    def per_position(self) -> float:
        return self.seconds / self.positions


SHORT_POINTS = 2000  # a short run's points: a few batches (the 1B shape in bf16: about three minutes on 2 CPU cores)


def time_encoding(encoder, sentences: list, *, batch_size: int = BATCH_SIZE, points: int = SHORT_POINTS) -> ShortRun:
    """The encoding of ``sentences``' first batches (:func:`isoflow.layers.encoder.batches`), timed: one batch to warm
    up, then batches until ``points`` points (at least one batch); the states are dropped."""
    from .encoder import batches

    positions = got = 0
    stream = batches(encoder, sentences, batch_size=batch_size)
    if next(stream, None) is None:
        raise ValueError("a short run needs at least one sentence")
    start = time.perf_counter()
    for batch in stream:
        positions, got = positions + batch.n_positions, got + len(batch.types)
        if got >= points:
            break
    if positions == 0:  # one batch in all: timed again, warm now
        start = time.perf_counter()
        batch = next(batches(encoder, sentences[:batch_size], batch_size=batch_size))
        positions, got = batch.n_positions, len(batch.types)
    return ShortRun(positions, got, time.perf_counter() - start)


def fit_encoding(calibrations: list[tuple[float, ModelShape, float]]) -> tuple[float, float]:
    """``(encode, encode_overhead)`` (:class:`Rates`) from calibration runs, each as (its encoding's seconds a computed
    position — or a point, where its record does not count positions —, its model's shape, the machine's GEMM rate in
    its weights' dtype at its width): a position's seconds = multiplied /
    (encode · GEMM rate) + overhead, solved by least squares (exactly, from two models of different sizes)."""
    a = np.array([[model.multiplied / gemm, 1.0] for _, model, gemm in calibrations])
    (inverse, overhead), *_ = np.linalg.lstsq(a, np.array([seconds for seconds, _, _ in calibrations]), rcond=None)
    return float(1.0 / inverse), float(overhead)


def fit_rates(meta: dict, model: ModelShape, kernels: Kernels, *, encoding: tuple[float, float] | None = None) -> Rates:
    """The rates of one calibration run (its ``meta.json`` as a dict; made with ``states: all``, every layer
    measured) of ``model``, beside the ``kernels`` measured at its width on the same machine: each part's products
    over its seconds summed over the layers (the spectra's after their eigen solves); a state's seconds beside its
    parts and eigen solves, the mean; the Lloyd iterations of a fit, those counted over the fits
    :func:`isoflow.layers.work.expected` counts; the encoding's rates from ``encoding`` (:func:`fit_encoding`; default:
    this run's alone, all its time taken as the weights' products over its computed positions)."""
    settings = LayerSettings(**meta["settings"])
    if settings.states != "all":
        raise ValueError("a calibration run keeps every point (states: all): its encoding then folds no sums")
    work = meta["work"]
    layers = len(work)
    total = {key: sum(layer.get(key, 0.0) for layer in work.values()) for key in {k for w in work.values() for k in w}}
    seconds = meta["seconds"]
    parts = sum(total.get(f"seconds_{part}", 0.0) for part in PART_DTYPE)
    n = meta["n_points"]
    once = expected(n, meta["dim"], settings, past_first=n - meta["sentences_used"], iterations=1)
    fits = layers * once["lloyd_iterations"]
    spectrum_seconds = total["seconds_spectrum"] - layers * SPECTRUM_EIGVALSH * kernels.eigvalsh
    if encoding is None:
        positions = meta.get("positions_computed", n)  # a record made before positions were counted: its points
        encoding = (model.multiplied * positions / seconds["encode"] / kernels.gemm["float32"], 0.0)
    return Rates(
        encode=encoding[0],
        encode_overhead=encoding[1],
        spectrum=_rate(total.get("spectrum_products", 0), spectrum_seconds),
        k_decisions=_rate(
            total.get("kmeans_products", 0) + total.get("silhouette_products", 0), total.get("seconds_k_decisions", 0.0)
        ),  # fmt: skip
        neighbours=_rate(total.get("neighbour_products", 0), total.get("seconds_neighbours", 0.0)),
        state_seconds=(sum(seconds[name] for name in work) - parts) / layers - STATE_EIGH * kernels.eigh,
        iterations=total["lloyd_iterations"] / fits if fits else 0.0,
        kernels=kernels,
    )


def _rate(products: float, seconds: float) -> float:
    """Products a second; 0 for a part the calibration did not reach (too few points for its neighbours, say)."""
    return products / seconds if products else 0.0


def _seconds(products: float, rate: float, part: str) -> float:
    if not products:
        return 0.0
    if not rate:
        raise ValueError(f"the calibration measured no {part} (too few points for them?); this run's states need them")
    return products / rate


def part_seconds(counts: dict, rates: Rates, kernels: Kernels, *, streamed: bool = False) -> dict[str, float]:
    """Each part of a state's seconds for its ``counts`` (:class:`isoflow.layers.work.Work`'s, or
    :func:`~isoflow.layers.work.expected`'s): the large parts at ``rates`` carried to the state's width by the
    ``kernels`` there, and the eigen solves at their seconds there (``rest``: the state's fixed seconds, its
    principal axes and, keeping a sample (``streamed``), the sums' spectra)."""
    at_width = {part: kernels.gemm[kind] / rates.kernels.gemm[kind] for part, kind in PART_DTYPE.items()}
    return {
        "spectrum": _seconds(counts["spectrum_products"], rates.spectrum * at_width["spectrum"], "spectra")
        + SPECTRUM_EIGVALSH * kernels.eigvalsh,
        "k_decisions": _seconds(
            counts["kmeans_products"] + counts["silhouette_products"],
            rates.k_decisions * at_width["k_decisions"],
            "K decisions",
        ),  # fmt: skip
        "neighbours": _seconds(
            counts["neighbour_products"], rates.neighbours * at_width["neighbours"], "neighbour searches"
        ),  # fmt: skip
        "rest": rates.state_seconds + STATE_EIGH * kernels.eigh + streamed * SUMS_EIGVALSH * kernels.eigvalsh,
    }


def predict(
    model: ModelShape,
    settings: LayerSettings,
    rates: Rates,
    kernels: Kernels,
    *,
    points: int,
    dtype: str = "float32",
    kept: int | None = None,
    sentences: int | None = None,
    measured: int | None = None,
    iterations: float | None = None,
    positions: int | None = None,
    short: ShortRun | None = None,
) -> dict[str, float]:
    """Seconds of a run of ``model`` over ``points`` points at ``settings`` with weights in ``dtype``: ``encode``
    (``encode_scatters`` of it), ``state`` (one measured state's, ``state_<part>`` its parts) and ``measure``
    (``measured`` states: every one by default), with ``kernels`` the machine's at the model's width; ``kept`` the
    points a run keeping its sample kept, ``sentences`` the sentences they came from (their first positions; None:
    static vectors), ``iterations`` the Lloyd iterations of a fit (default: the calibration's), ``positions`` those
    the forward passes compute (:func:`isoflow.layers.encoder.padded_positions`; default: the points, as if nothing
    were padded), ``short`` a short run of the model, whose seconds a position replace the formula's."""
    d = model.dim
    states = model.states if measured is None else measured
    streamed = settings.states == "sample"
    scatters = 2 * points * d * d * states / kernels.gemm["float64"] if streamed else 0.0
    if short is not None:
        forward = short.per_position
    else:
        forward = model.multiplied / (rates.encode * kernels.gemm[dtype]) + rates.encode_overhead
    positions = points if positions is None else positions
    n = points if not streamed or kept is None else kept  # the points a state's measures run on
    past_first = None if sentences is None else n - round(sentences * n / points)
    iterations = rates.iterations if iterations is None else iterations
    counts = expected(n, d, settings, past_first=past_first, iterations=iterations)
    parts = part_seconds(counts, rates, kernels, streamed=streamed)
    state = sum(parts.values())
    return {
        "encode": positions * forward + scatters,
        "encode_scatters": scatters,
        "state": state,
        **{f"state_{part}": value for part, value in parts.items()},
        "measure": states * state,
        "total": positions * forward + scatters + states * state,
    }
