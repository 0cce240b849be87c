"""Linear CKA between the layers of two models on the same words: which layer of one model is most like which layer of
the other, whatever their tokenisers.

Tokenisers cut one sentence into different pieces, so two models' token states have no common rows. Their words do:
each model's state of a word is the mean of its pieces' states (the layer analysis' ``words`` mode,
:func:`isoflow.layers.encoder.batches`), and a word is the same row in both when it is the same word of the same
sentence (a word a model's length limit cut off is left out of both). The sentences are the corpus' in the seeded
order until ``n_words`` words (:func:`words_sample`): the same for every model, unlike a layer analysis' sample, which
stops at a number of a model's own tokens.

:func:`run_cross` is one pair of models on one corpus, corpus to files (``cross.parquet``, ``cross.json``: the record),
written together (an interrupted run leaves nothing); ``isoflow layers-cross`` and the workflow's ``layers_cross`` rule
call it, and ``isoflow layers-report`` tables and draws what it wrote beside the layer analyses.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import torch

from .. import corpora
from ..models.spec import ModelSpec
from . import CROSS_COLUMNS, CROSS_FILES, CROSS_WORDS
from .encoder import Encoder, batches, load_encoder
from .runs import CrossComparison


def words_sample(sentences, n_words: int, seed: int) -> list[list[str]]:
    """Whole sentences in the seeded order until ``n_words`` words: the same sentences whatever the model."""
    return corpora.sample(sentences, n_words, seed, len)


def word_states(encoder: Encoder, sentences: list[list[str]], batch_size: int = 32) -> tuple[dict, list[np.ndarray]]:
    """Every layer's state of every word the model reads (the mean of its pieces), and each word's row: ``{(sentence,
    word position): row}``."""
    keys: dict[tuple[int, int], int] = {}
    per_layer: list[list[np.ndarray]] = []
    starts = range(0, len(sentences), batch_size)
    for b0, batch in zip(starts, batches(encoder, sentences, batch_size=batch_size, mode="words")):
        # A batch's words come sentence by sentence, each sentence's in order of position: a new sentence starts
        # wherever the position does not increase.
        sentence, previous = b0 - 1, None
        for position in batch.positions.tolist():
            if previous is None or position <= previous:
                sentence += 1
            keys[(sentence, position)] = len(keys)
            previous = position
        per_layer = per_layer or [[] for _ in batch.layers]
        for layer, points in zip(per_layer, batch.layers):
            layer.append(points)
    return keys, [np.concatenate(parts) for parts in per_layer]


def cross_model_cka(a: Encoder, b: Encoder, sentences: list[list[str]], batch_size: int = 32) -> list[dict]:
    """Linear CKA (biased and debiased) between every layer of ``a`` and every layer of ``b`` on the words both read
    of ``sentences``, and on those past each sentence's first word (a causal LM's first position is an attention sink):
    rows of :data:`CROSS_COLUMNS`."""
    from ..metrics import linear_cka_matrices

    keys_a, states_a = word_states(a, sentences, batch_size)
    keys_b, states_b = word_states(b, sentences, batch_size)
    common = sorted(keys_a.keys() & keys_b.keys())
    rows = []
    for subset, words in (("all", common), ("no first word", [k for k in common if k[1] > 0])):
        if len(words) < 4:  # the debiased estimator needs 4 points
            continue
        ia = np.array([keys_a[k] for k in words])
        ib = np.array([keys_b[k] for k in words])
        xs = [torch.from_numpy(s[ia]) for s in states_a]
        ys = [torch.from_numpy(s[ib]) for s in states_b]
        biased, debiased = (m.numpy() for m in linear_cka_matrices(xs, others=ys))
        for i in range(len(xs)):
            for j in range(len(ys)):
                rows.append(
                    {
                        "subset": subset,
                        "layer_a": i,
                        "layer_b": j,
                        "n_words": len(words),
                        "cka": float(biased[i, j]),
                        "cka_debiased": float(debiased[i, j]),
                    }
                )
    return rows


def run_cross(
    model_a: str | os.PathLike | ModelSpec,
    model_b: str | os.PathLike | ModelSpec,
    corpus: str,
    *,
    n_words: int = CROSS_WORDS,
    seed: int = 0,
    out: str | os.PathLike | None = None,
    results: str | os.PathLike = "results",
    data_dir: str | os.PathLike = "data",
    raw_dir: str | os.PathLike | None = None,
    mirror=None,
    device: str = "auto",
    batch_size: int = 32,
    force: bool = False,
    corpus_name: str | None = None,
) -> Path:
    """Linear CKA between every layer of ``model_a`` and every layer of ``model_b`` on the same ``n_words`` words of
    ``corpus`` (:func:`cross_model_cka`), each a name or path or a :class:`~isoflow.models.spec.ModelSpec`; returns
    the output directory (default ``results/layers/runs/cross/<a>/<b>/<corpus>``)."""
    import pandas as pd

    from ..run_inputs import run_inputs
    from ..skeleton import Outcome, Place, run_section

    if isinstance(n_words, bool) or not isinstance(n_words, int) or n_words < 4:
        raise ValueError(f"n_words must be an integer of at least 4 (the debiased CKA's points); got {n_words!r}")
    where = {"device": device, "data_dir": data_dir, "raw_dir": raw_dir, "mirror": mirror}
    inputs = [run_inputs(model=m, **where) for m in (model_a, model_b)]
    if static := [i.model.name for i in inputs if i.model.kind == "static"]:
        raise ValueError(f"{static[0]} is a static table: CKA across layers needs two contextual models")
    names = [i.model.name for i in inputs]
    corpus_label = corpus_name or corpora.corpus_name(corpus)
    out = Path(out or CrossComparison(names[0], names[1], corpus_label).path(results))
    place = Place(out, "cross.json", expected=CROSS_FILES, force=force, kind="cross-model CKA")

    def body() -> Outcome:
        t0 = time.perf_counter()
        sentences = words_sample(corpora.load(corpus, inputs[0].cache, mirror), n_words, seed)
        encoders = [load_encoder(i.model, i.device) for i in inputs]
        with torch.inference_mode():
            rows = cross_model_cka(*encoders, sentences, batch_size=batch_size)
        table = pd.DataFrame(rows, columns=list(CROSS_COLUMNS))
        for column, value in (("corpus", corpus_label), ("model_b", names[1]), ("model_a", names[0])):
            table.insert(0, column, value)
        measured = {
            "model_a": names[0],
            "model_b": names[1],
            "corpus": corpus_label,
            "n_sentences": len(sentences),
            "words_sampled": sum(map(len, sentences)),
            "layers": [e.n_states for e in encoders],
            "device": str(inputs[0].device),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        settings = {"n_words": n_words, "seed": seed, "batch_size": batch_size}
        return Outcome(settings, measured, files=lambda tmp: table.to_parquet(tmp / "cross.parquet", index=False))

    return run_section("layers", place, body)
