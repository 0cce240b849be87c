"""One layer analysis from corpus to files: ``<out>/layers.parquet`` (+ ``layers.csv``), ``pca.parquet`` (the view
layer's PCA), ``clusters.parquet`` (what each layer's K-means clusters hold) and ``meta.json``, written together
through a temp directory (an interrupted run leaves nothing).

Contextual models: every layer's token states, streamed through :class:`~isoflow.layers.store.LayerStore`.
Static vectors (``glove-50d``, ``word2vec-222``): one "layer", one point per distinct corpus word the vectors know
(lower-cased, as GloVe's vocabulary is), so Cai et al.'s Table 3 (contextual vs static LID) has an analogue.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .. import corpora, interrupt
from ..atomic import atomic_dir, check_replaceable
from ..datasets import raw_cache
from ..devices import resolve_device
from ..models import STATIC_MODELS
from ..models.local import warn_unknown_tokens
from ..progress import progress_bar
from ..records import run_record
from .encoder import TYPE_MODES, batches, count_points, load_encoder
from .measure import LayerSettings, cluster_composition, layer_metrics, pca_view
from .store import LayerStore

LAYER_FILES = ("layers.parquet", "layers.csv", "pca.parquet", "clusters.parquet", "meta.json")


logger = logging.getLogger(__name__)


def layers_dir(model: str, corpus: str, results: str | os.PathLike = "results") -> Path:
    """``results/layers/runs/<model>/<corpus>`` (the layers section's runs; ``corpus``: its name)."""
    return Path(results) / "layers" / "runs" / model / corpus


def _warn_unmeasured(model: str, corpus: str, layer: int, row: dict) -> None:
    if row.get("notes"):
        logger.warning("%s x %s, layer %d: %s; those cells are left empty", model, corpus, layer, row["notes"])


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_layers(
    model: str,
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
    batch_size: int = 32,
    stream: bool = True,
    force: bool = False,
    progress: bool | None = None,
    model_name: str | None = None,
    corpus_name: str | None = None,
) -> Path:
    """Analyse ``model`` on ``corpus`` (see the module docstring); returns the output directory. ``model`` may be a
    local model folder (outputs then go under ``model_name`` or the folder's name)."""
    from ..models.hub import resolve
    from ..models.local import describe, is_local, local_name

    model, model_name = resolve(model, model_name)  # a hub id: its local snapshot folder
    local = is_local(model)
    name = local_name(model, model_name) if local else model
    max_tokens = settings.max_tokens
    if types not in TYPE_MODES:
        raise ValueError(f"types must be one of {', '.join(TYPE_MODES)}; got {types!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
    corpus_label = corpus_name or corpora.corpus_name(corpus)
    out = Path(out or layers_dir(name, corpus_label, results))
    check_replaceable(out, expected=LAYER_FILES, force=force)
    dev = resolve_device(device)
    cache = raw_cache(data_dir, raw_dir)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sentences = corpora.load(corpus, cache, mirror)
    timings["read_corpus"] = time.perf_counter() - t0
    meta = {
        "model": name,
        **({"source": describe(model)} if local else {}),
        "corpus": corpus_label,
        "corpus_sentences": len(sentences),
        "max_tokens": max_tokens,
        "types": types,
        "settings": settings.dict(),
        "device": str(dev),
    }

    job = _Job(
        model,
        name,
        sentences,
        settings,
        types,
        view_layer,
        cache,
        mirror,
        dev,
        batch_size,
        stream,
        out,
        timings,
        progress,
    )
    rows, view, clusters, info = _static(job) if model in STATIC_MODELS else _contextual(job)
    for row in rows:
        _warn_unmeasured(name, corpus_label, row.get("layer", 0), row)
    meta.update(info)
    meta.update(seconds=timings, peak_rss_mb=round(_peak_rss_mb(), 1))
    meta = run_record("layers", meta.pop("settings"), meta)
    interrupt.check()
    table = pd.DataFrame(rows)
    table.insert(0, "corpus", meta["corpus"])
    table.insert(0, "model", name)
    with atomic_dir(out, expected=LAYER_FILES, force=force, kind="layers") as tmp:
        table.to_parquet(tmp / "layers.parquet", index=False)
        table.to_csv(tmp / "layers.csv", index=False)
        pd.DataFrame(view).to_parquet(tmp / "pca.parquet", index=False)
        composition = pd.DataFrame(clusters)
        composition.insert(0, "corpus", meta["corpus"])
        composition.insert(0, "model", name)
        composition.to_parquet(tmp / "clusters.parquet", index=False)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, default=float) + "\n")
    return out


@dataclass
class _Job:
    """What one analysis works with, past the checks of :func:`run_layers`."""

    model: str
    name: str  # the model's name in the outputs (the config's, or the folder's), also in progress and warnings
    sentences: list
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


def _contextual(job: _Job):
    model, sentences, settings, types, view_layer = job.model, job.sentences, job.settings, job.types, job.view_layer
    cache, mirror, dev, batch_size, stream, out = job.cache, job.mirror, job.dev, job.batch_size, job.stream, job.out
    timings, progress, max_tokens = job.timings, job.progress, job.settings.max_tokens
    t = time.perf_counter()
    encoder = load_encoder(model, cache, mirror, dev)
    timings["load_model"] = time.perf_counter() - t
    n_layers = encoder.n_states
    view_layer = n_layers // 2 if view_layer is None else view_layer
    if not 0 <= view_layer < n_layers:
        raise ValueError(f"view layer {view_layer} is out of range: {job.name} has layers 0..{n_layers - 1}")
    t = time.perf_counter()
    chosen = corpora.sample(sentences, max_tokens, settings.seed, lambda words: count_points(encoder, words, types))
    n_points = sum(count_points(encoder, words, types) for words in chosen)
    warn_unknown_tokens(encoder.tokenizer, [" ".join(words) for words in chosen], job.name)
    if n_points == 0:
        raise ValueError(f"the corpus gave no {types} to analyse")
    timings["sample"] = time.perf_counter() - t
    t = time.perf_counter()
    type_list: list[str] = []
    position_parts: list[np.ndarray] = []
    n_special = 0
    bar = progress_bar(progress, len(chosen), f"{job.name}: encoding", "sent")
    with LayerStore(n_layers, n_points, encoder.dim, out.parent if stream else None) as store:
        for layers, point_types, specials, positions in batches(encoder, chosen, batch_size=batch_size, mode=types):
            store.append(layers)
            type_list += point_types
            position_parts.append(positions)
            n_special += specials
            interrupt.check()
            if bar is not None:
                bar.update(min(batch_size, len(chosen) - bar.n))
        if bar is not None:
            bar.close()
        timings["encode"] = time.perf_counter() - t
        type_arr = np.asarray(type_list, dtype=object)
        position_arr = np.concatenate(position_parts)
        freq = Counter(type_list)
        rows, view, clusters = [], {}, []
        bar = progress_bar(progress, n_layers, f"{job.name}: measuring", "layer")
        for layer in range(n_layers):
            t = time.perf_counter()
            points = torch.from_numpy(store.layer(layer)).to(dev)
            row, extra = layer_metrics(points, type_arr, settings)
            rows.append({"layer": layer, **row})
            idx = extra["sample"]
            sample_types = type_arr if idx is None else type_arr[idx.cpu().numpy()]
            sample_positions = position_arr if idx is None else position_arr[idx.cpu().numpy()]
            clusters += [
                {"layer": layer, **c} for c in cluster_composition(extra["clusters"], sample_types, sample_positions)
            ]
            if layer == view_layer:
                sample_points = points if idx is None else points[idx]
                view = {
                    "layer": layer,
                    **pca_view(
                        sample_points,
                        extra["clusters"],
                        sample_types,
                        np.array([freq[x] for x in sample_types]),
                        sample_positions,
                        seed=settings.seed,
                    ),
                }
            timings[f"layer{layer}"] = time.perf_counter() - t
            del points
            interrupt.check()
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        streamed = store.on_disk
    info = {
        "n_layers": n_layers,
        "dim": encoder.dim,
        "n_points": n_points,
        "sentences_used": len(chosen),
        "special_tokens_excluded": n_special,
        "view_layer": view_layer,
        "streamed": streamed,
        "hidden_states": "0 = embeddings, 1..L = blocks",
    }
    return rows, view, clusters, info


def _static(job: _Job):
    model, sentences, settings, cache, mirror, dev = (
        job.model,
        job.sentences,
        job.settings,
        job.cache,
        job.mirror,
        job.dev,
    )
    timings, max_tokens = job.timings, job.settings.max_tokens
    t = time.perf_counter()
    vectors = STATIC_MODELS[model].load(cache, mirror)
    timings["load_model"] = time.perf_counter() - t
    known = set(vectors.words)
    chosen = corpora.sample(sentences, max_tokens, settings.seed, len)
    counts = Counter(w.lower() for words in chosen for w in words)
    words = sorted(w for w in counts if w in known)
    if len(words) < 3:
        raise ValueError(f"only {len(words)} of the corpus' words are in the vocabulary of {model}")
    t = time.perf_counter()
    points = torch.from_numpy(vectors.lookup(words)).to(dev)
    row, extra = layer_metrics(points, np.arange(len(words)), settings)
    timings["layer0"] = time.perf_counter() - t
    idx = extra["sample"]
    sample_words = (
        np.asarray(words, dtype=object) if idx is None else np.asarray(words, dtype=object)[idx.cpu().numpy()]
    )
    view = {
        "layer": 0,
        **pca_view(
            points if idx is None else points[idx],
            extra["clusters"],
            sample_words,
            np.array([counts[w] for w in sample_words]),
            seed=settings.seed,
        ),
    }
    clusters = [{"layer": 0, **c} for c in cluster_composition(extra["clusters"], sample_words, None)]
    info = {
        "n_layers": 1,
        "dim": int(points.shape[1]),
        "n_points": len(words),
        "sentences_used": len(chosen),
        "corpus_words": int(sum(counts.values())),
        "words_not_in_vocabulary": len(counts) - len(words),
        "static": True,
    }
    return [{"layer": 0, **row}], view, clusters, info
