"""One layer analysis from corpus to files, written together through a temp directory (an interrupted run leaves no
half-written output; what it had done is kept beside it and resumed by the same command: :mod:`isoflow.layers.partial`):
``<out>/layers.parquet`` (+ ``layers.csv``: a row of measurements per layer, :mod:`isoflow.layers.measure`),
``pca.parquet`` (the PCA views' points at the middle layer and at the depth of Cai et al.'s GPT-2 roll, there also of
its largest K-means cluster alone),
``clusters.parquet`` (what each layer's K-means clusters hold, with and without first tokens), ``types.parquet``
(S_inter over the n most frequent types, per layer: its curve against the number of types), ``cka.parquet`` (linear
CKA, biased and debiased, between every pair of layers on one seeded sample of points, also without the sentences'
first positions: the model's block structure), ``kmeans.parquet``
(the silhouette of every K on every sample: the K decision's spread), ``dims.parquet`` (every layer's mean |activation|
and share of the mean cosine per dimension: outlier dimensions) and ``meta.json`` (the run record; for a contextual
model also its input-embedding table's LID, the static baseline of the same model).

Contextual models: every layer's token states, streamed through :class:`~isoflow.layers.store.LayerStore`.
Static vectors (``glove-50d``, ``word2vec-222``): one "layer", one point per distinct corpus word the vectors know
(lower-cased, as GloVe's vocabulary is), so Cai et al.'s Table 3 (contextual vs static LID) has an analogue.
"""

from __future__ import annotations

import logging
import os
import resource
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .. import corpora, interrupt
from ..models import STATIC_MODELS
from ..models.local import warn_unknown_tokens
from ..models.resolve import ResolvedModel
from ..models.shapes import folder_shape
from ..models.spec import ModelSpec
from ..progress import progress_bar
from ..run_inputs import run_inputs
from ..skeleton import Outcome, Place, run_section
from . import CKA_COLUMNS, LAYER_FILES, ROLL_LARGEST, TYPE_MODES, TYPES_COLUMNS
from .composition import cluster_composition
from .cost import RunShape, check_memory, check_weights, type_sums_bytes
from .encoder import batches, count_points, load_encoder
from .measure import LayerSettings, layer_metrics, pair_sample
from .partial import PartialRun
from .pca import pca_view
from .runs import Analysis
from .settings import BATCH_SIZE
from .store import LayerStore, available_memory, large_blocks_mapped, release_freed_memory, types_file
from .streamed import LayerStatistics, SharedSample, TypeIndex, with_streamed
from .subset import check_spec, chosen_layers

logger = logging.getLogger(__name__)


def layers_dir(model: str, corpus: str, results: str | os.PathLike = "results") -> Path:
    """``results/layers/runs/<model>/<corpus>`` (the layers section's runs; ``corpus``: its name)."""
    return Path(Analysis(model, corpus).path(results))


def _warn_unmeasured(model: str, corpus: str, layer: int, row: dict) -> None:
    if row.get("notes"):
        logger.warning("%s x %s, layer %d: %s; those cells are left empty", model, corpus, layer, row["notes"])


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_layers(
    model: str | os.PathLike | ModelSpec,
    corpus: str,
    *,
    settings: LayerSettings = LayerSettings(),
    types: str = "tokens",
    view_layer: int | None = None,
    out: str | os.PathLike | None = None,
    results: str | os.PathLike = "results",
    data_dir: str | os.PathLike = "data",
    raw_dir: str | os.PathLike | None = None,
    mirror=None,
    device: str = "auto",
    batch_size: int = BATCH_SIZE,
    stream: bool = True,
    force: bool = False,
    progress: bool | None = None,
    corpus_name: str | None = None,
    layers: str | None = None,
) -> Path:
    """Analyse ``model`` on ``corpus`` (see the module docstring); returns the output directory. ``model``: a name or
    path, or a :class:`~isoflow.models.spec.ModelSpec` (outputs under its name, else the folder's; a revision: a
    checkpoint of a hub id or of a local series; a dtype: :func:`isoflow.models.resolve.resolve_model`). ``layers``:
    the states measured (:mod:`isoflow.layers.subset`; None: every one) — only those are stored and measured."""
    check_spec(layers)
    if types not in TYPE_MODES:
        raise ValueError(f"types must be one of {', '.join(TYPE_MODES)}; got {types!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
    inputs = run_inputs(device=device, model=model, data_dir=data_dir, raw_dir=raw_dir, mirror=mirror)
    corpus_label = corpus_name or corpora.corpus_name(corpus)
    out = Path(out or layers_dir(inputs.model.name, corpus_label, results))
    place = Place(out, "meta.json", expected=LAYER_FILES, force=force, kind="layers")
    job = _Job(inputs.model, inputs.model.name, [], settings, types, view_layer, inputs.cache, mirror, inputs.device,
               batch_size, stream, out, {}, progress, None, layers)  # fmt: skip
    return run_section("layers", place, lambda: _measured(job, corpus, corpus_label))


def _measured(job: _Job, corpus: str, corpus_label: str) -> Outcome:
    """The body: the corpus read, every layer measured (a contextual model's streamed analysis resumed from what an
    interrupted run kept), and what the record and the files hold."""
    resolved, name, settings = job.model, job.name, job.settings
    t0 = time.perf_counter()
    job.sentences = corpora.load(corpus, job.cache, job.mirror)
    job.timings["read_corpus"] = time.perf_counter() - t0
    meta = {
        "model": name,
        **({"source": resolved.source} if resolved.local else {}),
        "corpus": corpus_label,
        "corpus_sentences": len(job.sentences),
        "max_tokens": settings.max_tokens,
        "types": job.types,
        "device": str(job.dev),
    }
    static = resolved.kind == "static"
    if job.stream and not static:
        what = {k: meta[k] for k in ("model", "corpus", "corpus_sentences", "types")}
        identity = {**what, "settings": settings.dict(), "source": resolved.source, "batch_size": job.batch_size}
        if job.layers is not None:  # a subset is another run (the states kept are the subset's)
            identity["layers"] = job.layers
        job.partial = PartialRun(job.out, identity)
    outputs = _static(job) if static else _contextual(job)
    for row in outputs[0]:
        _warn_unmeasured(name, corpus_label, row.get("layer", 0), row)
    meta.update(outputs[-1])
    meta.update(seconds=job.timings, peak_rss_mb=round(_peak_rss_mb(), 1), **({"work": job.work} if job.work else {}))
    return Outcome(settings.dict(), meta, files=_files(name, corpus_label, *outputs[:-1]), progress=job.partial)


def _files(name: str, corpus: str, rows, views, clusters, kmeans, dims, types_curve, cka):
    """What writes a layer analysis' files into the folder it is given, each table labelled with model and corpus."""

    def labelled(frame: pd.DataFrame) -> pd.DataFrame:
        frame.insert(0, "corpus", corpus)
        frame.insert(0, "model", name)
        return frame

    table = labelled(pd.DataFrame(rows))

    def write_files(tmp: Path) -> None:
        table.to_parquet(tmp / "layers.parquet", index=False)
        table.to_csv(tmp / "layers.csv", index=False)
        views.to_parquet(tmp / "pca.parquet", index=False)
        labelled(pd.DataFrame(clusters)).to_parquet(tmp / "clusters.parquet", index=False)
        labelled(pd.DataFrame(kmeans, columns=["layer", "subset", "sample", "k", "silhouette"])).to_parquet(
            tmp / "kmeans.parquet", index=False
        )
        labelled(dims).to_parquet(tmp / "dims.parquet", index=False)
        labelled(pd.DataFrame(types_curve, columns=list(TYPES_COLUMNS))).to_parquet(tmp / "types.parquet", index=False)
        labelled(pd.DataFrame(cka, columns=list(CKA_COLUMNS))).to_parquet(tmp / "cka.parquet", index=False)

    return write_files


@dataclass
class _Job:
    """What one analysis works with, past the checks of :func:`run_layers`."""

    model: ResolvedModel  # its loader
    name: str  # the model's name in the outputs (the config's, or the folder's), also in progress and warnings
    sentences: list  # the corpus, read by the run's body
    settings: LayerSettings
    types: str
    view_layer: int | None
    cache: Path
    mirror: object
    dev: torch.device
    batch_size: int
    stream: bool
    out: Path
    timings: dict
    progress: bool | None
    partial: PartialRun | None  # where a contextual model's streamed analysis keeps its progress (set by the body)
    layers: str | None  # the states measured (isoflow.layers.subset); None: every one
    work: dict = field(default_factory=dict)  # each measured layer's counted arithmetic (isoflow.layers.work)


def roll_layer(n_states: int) -> int:
    """The layer at the depth where Cai et al. show GPT-2's "Swiss roll": their layer 2 of 12, scaled to the model
    (states 0..L)."""
    return max(1, round((n_states - 1) * 2 / 12)) if n_states > 1 else 0


def _layer_outputs(layer: int, row: dict, extra: dict, types: np.ndarray, positions: np.ndarray | None):
    """The rows a layer adds to clusters.parquet, kmeans.parquet and dims.parquet."""
    idx = extra["sample"]
    chosen = slice(None) if idx is None else idx.cpu().numpy()
    clusters = [
        {"layer": layer, "subset": "all", **c}
        for c in cluster_composition(extra["clusters"], types[chosen], None if positions is None else positions[chosen])
    ]
    if extra["nofirst"] is not None:
        where, labels = extra["nofirst"]
        where = where.cpu().numpy()
        clusters += [
            {"layer": layer, "subset": "no first token", **c}
            for c in cluster_composition(labels, types[where], positions[where])
        ]
    kmeans = [{"layer": layer, **r} for r in extra["kmeans"]]
    profile = extra["dims"]
    dims = {
        "layer": np.full(len(profile["mean_abs_activation"]), layer),
        "dim": np.arange(len(profile["mean_abs_activation"])),
        **profile,
    }
    return clusters, kmeans, pd.DataFrame(dims)


def _input_table(encoder, token_ids: np.ndarray, settings: LayerSettings, dev) -> dict:
    """The static baseline of a contextual model: LID, TwoNN and IsoScore of its own input-embedding rows of the
    token types analysed (Cai et al.'s Table 3 sets contextual LID against static vectors)."""
    from ..metrics import distinct_points, isoscore, knn_distances, lid_from_distances, lid_mle, twonn_from_distances
    from .measure import _unit

    table = encoder.model.get_input_embeddings().weight.detach()
    rows = table[torch.as_tensor(np.unique(token_ids), device=table.device)].to(dev).float()
    info = {"n_points": int(rows.shape[0]), "dim": int(rows.shape[1])}
    rows = distinct_points(rows, warn=False)  # types sharing one row (e.g. never-trained ones) are one point to LID
    info["lid_points"] = int(rows.shape[0])
    if rows.shape[0] <= settings.k_lid:
        return {**info, "note": f"{rows.shape[0]} types, fewer than LID's {settings.k_lid} neighbours + 1"}
    r = knn_distances(rows, settings.k_lid)
    return {
        **info,
        "lid_euclidean": lid_from_distances(r),
        "lid_cosine": lid_mle(_unit(rows), k=settings.k_lid),
        "twonn": twonn_from_distances(r),
        "isoscore": isoscore(rows),
    }


def _weights_fit(job: _Job) -> None:
    """A Hugging Face model folder whose weights alone would not fit this machine's memory is refused before they
    load (their size read from the folder's safetensors headers: isoflow.models.shapes)."""
    if job.dev.type != "cpu" or job.model.kind != "hugging-face" or not Path(job.model.load).is_dir():
        return
    shape = folder_shape(job.model.load)
    if shape is not None:
        dtype = job.model.dtype
        check_weights(shape.weight_bytes(dtype), available_memory(), model=job.name, dtype=dtype)


def _contextual(job: _Job):
    settings, timings = job.settings, job.timings
    _weights_fit(job)
    t = time.perf_counter()
    encoder = load_encoder(job.model, job.dev)
    timings["load_model"] = time.perf_counter() - t
    measured = chosen_layers(job.layers, encoder.n_states)
    view_layer, views_wanted = _views(job, encoder.n_states, measured)
    t = time.perf_counter()
    chosen, n_points = sampled_sentences(encoder, job.sentences, job.settings, job.types, job.name)
    timings["sample"] = time.perf_counter() - t
    # A run keeping its K-means samples' points alone (states: sample) keeps those rows, and sums over all points
    shared = SharedSample.of(n_points, settings) if settings.states == "sample" else None
    kept = n_points if shared is None else len(shared.rows)
    costed = job.dev.type == "cpu" or shared is not None
    counts = dict(measured=len(measured), n_points=n_points, kept=kept)
    shape = encoded_run_shape(encoder, chosen, job.settings, job.types, job.batch_size, **counts) if costed else None
    if job.dev.type == "cpu":  # what the run will hold, checked before it encodes (the weights are in memory now)
        check_memory(shape, available_memory())
    sums_bytes = 0 if shared is None else type_sums_bytes(shape)  # checked with the states' bytes
    store = (  # the measured states only, the store's k-th the state measured[k]
        job.partial.store(len(measured), kept, encoder.dim, sums_bytes)
        if job.partial is not None
        else LayerStore(len(measured), kept, encoder.dim, job.out.parent if job.stream else None, sums_bytes=sums_bytes)
    )
    with store:
        tokens, sums, earlier_threads = _encoded(job, encoder, chosen, store, measured, shared)
        timings["encode"] = float(tokens["seconds"])
        type_arr, position_arr = tokens["types"], tokens["positions"]
        freq = Counter(type_arr.tolist())
        if shared is not None:  # the measures that need the points read the kept ones
            type_arr, position_arr = type_arr[shared.rows], position_arr[shared.rows]
        release_freed_memory()  # the encoding's batches, before the layers' points and blocks take their place
        with large_blocks_mapped():  # each layer's points and blocks, freed layer after layer, leave nothing resident
            points = (type_arr, position_arr, freq)
            layers_out = _measured_layers(job, store, measured, points, views_wanted, shared, sums)
        sums = None
        release_freed_memory()  # the sums and the layers' working memory, before CKA reads every layer's pairs
        earlier_threads.update(layers_out.pop("earlier_threads"))
        t = time.perf_counter()
        with large_blocks_mapped():  # its pair after pair of copies would otherwise stay resident
            cka = layer_cka(store, position_arr, settings, job.dev, measured)
        timings["cka"] = time.perf_counter() - t
        streamed = store.on_disk
    t = time.perf_counter()
    input_table = _input_table(encoder, tokens["token_ids"], settings, job.dev) if job.types == "tokens" else {}
    timings["input_table"] = time.perf_counter() - t
    info = {
        "n_layers": encoder.n_states,
        **({"layers_measured": measured} if job.layers is not None else {}),
        "dim": encoder.dim,
        "n_points": n_points,
        **({"points_kept": kept} if shared is not None else {}),
        "sentences_used": len(chosen),
        "special_tokens_excluded": int(tokens["n_special"]),
        # what the encoding's time grows with: the batches' padded positions (an encoding an earlier version left
        # does not say)
        **({"positions_computed": int(tokens["positions_computed"])} if "positions_computed" in tokens else {}),
        "view_layer": view_layer,
        "roll_layer": roll_layer(encoder.n_states),
        "streamed": streamed,
        "hidden_states": "0 = embeddings, 1..L = blocks (GPT-2, Llama, Gemma: L after the final norm)",
        "tokenizer": {
            "words": "split" if encoder.split_words else "joined text, pieces to words by offsets",
            "special_tokens_added": encoder.specials_added,
            "padding_side": "right",
        },
        "input_table": input_table,
        **_resumed_info(job, earlier_threads, layers_out.pop("resumed")),
    }
    o = layers_out
    views, dims = pd.concat(o["views"], ignore_index=True), pd.concat(o["dims"], ignore_index=True)
    return o["rows"], views, o["clusters"], o["kmeans"], dims, o["types"], cka, info


def encoded_run_shape(
    encoder,
    chosen: list,
    settings: LayerSettings,
    types: str,
    batch_size: int,
    *,
    measured: int,
    n_points: int,
    kept: int,
) -> RunShape:
    """The shape for :mod:`isoflow.layers.cost` of a run encoding the ``chosen`` sentences (``n_points`` points,
    ``kept`` of them kept) and measuring ``measured`` states: the weights as loaded, and the types its points will
    have (every token's piece, every word, or at most a sentence's last token each)."""
    if types == "tokens":
        enc, _ = encoder.tokenize(chosen)  # specials included: a few types more, an upper bound
        n_types = len({i for row in enc["input_ids"] for i in row})
    else:
        n_types = len({w for words in chosen for w in words}) if types != "last-token" else len(chosen)
    return RunShape.at(
        settings,
        weight_bytes=sum(p.numel() * p.element_size() for p in encoder.model.parameters()),
        dim=encoder.dim,
        states=encoder.n_states,
        measured=measured,
        points=n_points,
        types=min(n_types, n_points),
        kept=kept,
        batch_points=-(-batch_size * n_points // max(len(chosen), 1)),
    )


def _views(job: _Job, n_layers: int, measured: list[int]) -> tuple[int, dict]:
    """The layer of the middle views (checked against the measured ones) and the layer of each view."""
    view_layer = measured[len(measured) // 2] if job.view_layer is None else job.view_layer
    if not 0 <= view_layer < n_layers:
        raise ValueError(f"view layer {view_layer} is out of range: {job.name} has layers 0..{n_layers - 1}")
    if view_layer not in measured:
        raise ValueError(f"view layer {view_layer} is not measured: --layers {job.layers} measures {measured}")
    # A shallow model may have both views at one layer; a subset, the roll's at the measured layer nearest its depth
    return view_layer, {"middle": view_layer, "roll": min(measured, key=lambda k: abs(k - roll_layer(n_layers)))}


def sampled_sentences(encoder, sentences: list, settings: LayerSettings, types: str, name: str) -> tuple[list, int]:
    """The corpus' ``sentences`` in the run's seeded order up to ``max_tokens`` points (of the ``types`` mode), and how
    many points they give; unknown tokens warned of under the model's ``name``."""
    count = lambda words: count_points(encoder, words, types)  # noqa: E731
    chosen = corpora.sample(sentences, settings.max_tokens, settings.seed, count)
    n_points = sum(count(words) for words in chosen)
    warn_unknown_tokens(encoder.tokenizer, [" ".join(words) for words in chosen], name)
    if n_points == 0:
        raise ValueError(f"the corpus gave no {types} to analyse")
    return chosen, n_points


def _encoded(job: _Job, encoder, chosen, store: LayerStore, measured: list[int], shared) -> tuple[dict, dict, dict]:
    """The encoding's tokens (and, keeping the samples alone, its sums): made here, or the finished encoding an
    interrupted run left (its states already in ``store``); with the threads of a stage an earlier process made."""
    partial = job.partial
    tokens = partial.encoded() if partial is not None else None
    sums = partial.statistics() if tokens is not None and shared is not None else None
    if shared is not None and sums is None:
        tokens = None  # a progress folder without the sums: encode again
    # The stages an earlier process made, and its threads (this one's are the record's own `threads`).
    earlier_threads = {} if tokens is None else {"encode": _threads(tokens)}
    if tokens is None:
        tokens, sums = _encode(job, encoder, chosen, store, measured, shared)
        if partial is not None:
            if sums is not None:  # before the tokens: kept tokens mean kept sums
                partial.save_statistics(sums)
            partial.save_encoded(**tokens)
    else:
        store.filled = store.n_points  # the states on disk are the finished encoding's
        if job.progress is not False:  # a resumed run says so where its progress goes
            print(f"{job.name}: encoding: done before, resumed from {partial.dir}", file=sys.stderr, flush=True)
    return tokens, sums, earlier_threads


def _measured_layers(job: _Job, store, measured, points, views_wanted, shared, sums) -> dict:
    """Every measured layer's outputs (``points``: the kept points' types, positions and all points' type
    frequencies), measured here or read back from an interrupted run's progress, in the order of ``measured``."""
    type_arr, position_arr, freq = points
    partial = job.partial
    out = {name: [] for name in ("rows", "views", "clusters", "kmeans", "dims", "types", "resumed")}
    out["earlier_threads"] = {}
    before = partial.measured_layers() if partial is not None else []
    resuming = f" ({len(before)} measured before, resumed)" if before else ""
    bar = progress_bar(job.progress, len(measured), f"{job.name}: measuring{resuming}", "layer")
    for stored, layer in enumerate(measured):
        done = partial.measured(layer) if partial is not None else None
        if done is None:
            t = time.perf_counter()
            kept_only = None if shared is None else (shared, sums["types"], sums["layers"][stored])
            done = _measure_layer(job, store, stored, layer, type_arr, position_arr, freq, views_wanted, kept_only)
            done["seconds"] = time.perf_counter() - t
            done["threads"] = torch.get_num_threads()
            if partial is not None:
                partial.save_measured(layer, done)
        else:
            out["resumed"].append(layer)
            out["earlier_threads"][f"layer{layer}"] = _threads(done)
        if sums is not None:  # its sums are read: freed before the next layer's (O(d²) each: 64 MB at d = 2,048)
            sums["layers"][stored] = None
        out["rows"].append(done["row"])
        out["dims"].append(done["dims"])
        for name in ("clusters", "kmeans", "types", "views"):
            out[name] += done[name]
        job.timings[f"layer{layer}"] = done["seconds"]
        if done.get("work"):  # a layer measured before its work was counted has none
            job.work[f"layer{layer}"] = done["work"]
        interrupt.check()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return out


def _resumed_info(job: _Job, earlier_threads: dict, resumed: list[int]) -> dict:
    """The record's ``resumed`` entry: what an earlier process made (the encoding, layers) and its threads."""
    if not earlier_threads:
        return {}
    encoding = job.partial.dir.name if "encode" in earlier_threads else None
    return {"resumed": {"encoding": encoding, "layers": resumed, "threads": earlier_threads}}


def layer_cka(store: LayerStore, positions: np.ndarray, settings: LayerSettings, dev, layers: list[int]) -> list[dict]:
    """Linear CKA (biased and debiased) between every pair of the store's layers (``layers``: the state each holds) on
    the seeded sample of
    ``pair_points`` points that uniformity is measured on (:func:`isoflow.layers.measure.pair_sample`), and on the
    same kind of sample of the points past each sentence's first position (a pre-norm LM's first position carries
    most of the centred variance in the middle layers, so the two can differ): rows of :data:`CKA_COLUMNS`, both
    triangles and the diagonal. A layer whose sampled points are all equal has no CKA: its cells are NaN."""
    n = store.filled
    out = []
    for subset, where in (("all", np.arange(n)), ("no first token", np.flatnonzero(np.asarray(positions) > 0))):
        if len(where) < 4:  # the debiased estimator needs 4 points
            continue
        pick = pair_sample(len(where), settings)
        chosen = where if pick is None else where[pick]
        biased, debiased = _cka_between_layers(store, chosen, dev, subset)
        for a in range(store.n_layers):
            for b in range(store.n_layers):
                out.append(
                    {
                        "subset": subset,
                        "layer_a": layers[a],
                        "layer_b": layers[b],
                        "n_points": len(chosen),
                        "cka": float(biased[a, b]),
                        "cka_debiased": float(debiased[a, b]),
                    }
                )
    return out


def _cka_between_layers(store: LayerStore, chosen: np.ndarray, dev, subset: str) -> tuple[np.ndarray, np.ndarray]:
    """Biased and debiased CKA between every pair of the store's layers on the ``chosen`` points: every layer's
    points read here and freed on return (the next subset's are not read while these are held)."""
    from ..metrics import linear_cka_matrices

    reps = [torch.from_numpy(store.rows(layer, chosen)).to(dev) for layer in range(store.n_layers)]
    try:
        matrices = linear_cka_matrices(reps)
    except ValueError as exc:  # all points equal in a layer
        logger.warning("layer-by-layer CKA (%s): %s; left empty", subset, exc)
        matrices = [torch.full((store.n_layers, store.n_layers), float("nan"))] * 2
    return tuple(m.cpu().numpy() for m in matrices)


def _threads(saved: dict) -> int | None:
    """The threads a stage saved by an earlier process ran on (None: saved before they were recorded)."""
    return None if saved.get("threads") is None else int(saved["threads"])


def _encode(job: _Job, encoder, chosen: list, store: LayerStore, measured: list[int], shared=None) -> tuple:
    """The ``measured`` layers' states of the chosen sentences into ``store`` — with ``shared`` (a
    :class:`~isoflow.layers.streamed.SharedSample`), its rows only, and every point folded into each layer's sums;
    returns what the tokens are (types, positions, ids), the special tokens left out and the seconds it took, and the
    sums (``{"types": TypeIndex, "layers": [LayerStatistics per measured layer]}``; None without ``shared``)."""
    t = time.perf_counter()
    sums = None
    if shared is not None:  # the types' sums beside the store's states, on disk where those are
        where = [None if store.directory is None else types_file(store.directory, k) for k in range(len(measured))]
        sums = {"types": TypeIndex(), "layers": [LayerStatistics(encoder.dim, path) for path in where]}
    offset = 0
    type_list: list[str] = []
    position_parts: list[np.ndarray] = []
    id_parts: list[np.ndarray] = []
    n_special = n_positions = 0
    bar = progress_bar(job.progress, len(chosen), f"{job.name}: encoding", "sent")
    for batch in batches(encoder, chosen, batch_size=job.batch_size, mode=job.types):
        size = len(batch.types)
        if shared is None:
            store.append([batch.layers[i] for i in measured])
        elif size:
            take = shared.in_batch(offset, size)
            store.append([batch.layers[i][take] for i in measured])
            codes, later = sums["types"].codes(batch.types), torch.from_numpy(np.asarray(batch.positions) > 0)
            for statistics, i in zip(sums["layers"], measured):
                statistics.update(torch.from_numpy(batch.layers[i]).to(job.dev), codes, later)
        offset += size
        type_list += batch.types
        position_parts.append(batch.positions)
        id_parts.append(batch.token_ids)
        n_special += batch.n_special
        n_positions += batch.n_positions
        interrupt.check()
        if bar is not None:
            bar.update(min(job.batch_size, len(chosen) - bar.n))
    if bar is not None:
        bar.close()
    return {
        "types": np.asarray(type_list, dtype=object),
        "positions": np.concatenate(position_parts),
        "token_ids": np.concatenate(id_parts),
        "n_special": np.int64(n_special),
        "positions_computed": np.int64(n_positions),
        "seconds": np.float64(time.perf_counter() - t),
        "threads": np.int64(torch.get_num_threads()),  # a resumed run's record names it (its seconds depend on it)
    }, sums


def _measure_layer(
    job: _Job, store: LayerStore, stored: int, layer: int, type_arr, position_arr, freq, views_wanted, kept_only=None
) -> dict:
    """One layer's row of layers.parquet (``layer``: the model's state, ``stored``: its place in ``store``) and what
    it adds to the other files (PCA views where one is wanted). ``kept_only``: (the shared sample, the run's types,
    this layer's sums) of a run that keeps its samples' points alone (``type_arr``, ``position_arr``: theirs)."""
    points = torch.from_numpy(store.layer(stored)).to(job.dev)
    if kept_only is None:
        row, extra = layer_metrics(points, type_arr, job.settings, position_arr)
    else:
        shared, types, statistics = kept_only
        counts = np.array([freq[t] for t in type_arr])  # the types' counts over all points rank them, as in memory
        row, extra = layer_metrics(
            points, type_arr, job.settings, position_arr, counts, drawn=shared.on(job.dev), type_counts=dict(freq)
        )
        s = job.settings
        sums = statistics.columns(types, outlier_factor=s.outlier_factor, outlier_remove=s.outlier_remove)
        row, extra = with_streamed(row, extra, sums)
    layer_clusters, layer_kmeans, layer_dims = _layer_outputs(layer, row, extra, type_arr, position_arr)
    views = []
    idx = extra["sample"]
    pick = np.arange(points.shape[0]) if idx is None else idx.cpu().numpy()
    sample, labels = (points if idx is None else points[idx]), extra["clusters"]
    for view_name in [name for name, at in views_wanted.items() if at == layer]:
        parts = [(view_name, torch.ones_like(labels, dtype=torch.bool))]
        if view_name == "roll" and int(labels.max()) > 0:  # K > 1: the largest cluster alone too (ROLL_LARGEST)
            parts.append((ROLL_LARGEST, labels == torch.bincount(labels).argmax()))
        for name, keep in parts:
            keep_np = keep.cpu().numpy()
            sample_types = type_arr[pick][keep_np]
            view = pca_view(
                sample[keep],
                labels[keep],
                sample_types,
                np.array([freq[x] for x in sample_types]),
                position_arr[pick][keep_np],
                seed=job.settings.seed,
            )
            views.append(pd.DataFrame({"layer": layer, "view": name, **view}))
    return {
        "row": {"layer": layer, **row},
        "types": [{"layer": layer, **r} for r in extra["types"]],
        "clusters": layer_clusters,
        "kmeans": layer_kmeans,
        "dims": layer_dims,
        "views": views,
        "work": extra["work"],
    }


def _static(job: _Job):
    settings = job.settings
    t = time.perf_counter()
    vectors = STATIC_MODELS[job.model.load].load(job.cache, job.mirror)
    job.timings["load_model"] = time.perf_counter() - t
    known = set(vectors.words)
    chosen = corpora.sample(job.sentences, settings.max_tokens, settings.seed, len)
    counts = Counter(w.lower() for words in chosen for w in words)
    words = sorted(w for w in counts if w in known)
    if len(words) < 3:
        raise ValueError(f"only {len(words)} of the corpus' words are in the vocabulary of {job.name}")
    t = time.perf_counter()
    points = torch.from_numpy(vectors.lookup(words)).to(job.dev)
    word_arr = np.asarray(words, dtype=object)
    row, extra = layer_metrics(points, word_arr, settings, frequency=np.array([counts[w] for w in words]))
    job.timings["layer0"] = time.perf_counter() - t
    job.work["layer0"] = extra["work"]
    idx = extra["sample"]
    sample_words = word_arr if idx is None else word_arr[idx.cpu().numpy()]
    view = pca_view(
        points if idx is None else points[idx],
        extra["clusters"],
        sample_words,
        np.array([counts[w] for w in sample_words]),
        seed=settings.seed,
    )
    clusters, kmeans, dims = _layer_outputs(0, row, extra, word_arr, None)
    info = {
        "n_layers": 1,
        "dim": int(points.shape[1]),
        "n_points": len(words),
        "sentences_used": len(chosen),
        "corpus_words": int(sum(counts.values())),
        "words_not_in_vocabulary": len(counts) - len(words),
        "static": True,
    }
    views = pd.DataFrame({"layer": 0, "view": "middle", **view})
    types_curve = [{"layer": 0, **r} for r in extra["types"]]
    return [{"layer": 0, **row}], views, clusters, kmeans, dims, types_curve, [], info
