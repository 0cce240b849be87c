"""Linear CKA between the layers of two models on the same words: which layer of one model is most like which layer of
the other, whatever their tokenisers.

Tokenisers cut one sentence into different pieces, so two models' token states have no common rows. Their words do:
each model's state of a word is the mean of its pieces' states (the layer analysis' ``words`` mode,
:func:`isoflow.layers.encoder.batches`), and a word is the same row in both when it is the same word of the same
sentence (a word a model's length limit cut off is left out of both). The sentences are the corpus' in the seeded
order until ``n_words`` words (:func:`words_sample`): the same for every model, unlike a layer analysis' sample, which
stops at a number of a model's own tokens.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import corpora
from .encoder import Encoder, batches

CROSS_COLUMNS = ("subset", "layer_a", "layer_b", "n_words", "cka", "cka_debiased")


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
