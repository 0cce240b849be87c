"""Hidden states of every layer of a transformer, per token, special tokens and padding excluded.

Models: the SBERT encoders isoflow ships offline (``minilm``, ``mpnet``: their underlying transformer, i.e. the
states sentence-transformers pools), a local model folder, a GGUF file or built-in GGUF model (its de-quantised
folder: :mod:`isoflow.models.gguf`), or any Hugging Face hub id that is cached or reachable (the paper's
``bert-base-uncased``, ``gpt2``, ``distilbert-base-uncased``; :mod:`isoflow.models.hub`). The states are
transformers' ``output_hidden_states``: state 0 is the embedding layer's output (Gemma's scaled by √width, as the
model scales it), states 1..L the blocks' outputs — the residual stream — except that for GPT-2, Llama and Gemma
state L is the last block's output *after the final norm* (what transformers returns there).

Causal language models: sequences are padded on the right (left padding would shift the positions a Llama-style
model gives its tokens); the tokenizer's own special tokens are added as the model was trained with them (Gemma's
``<bos>``; SmolLM2 adds none, so its first word is the sequence's first token) and left out of the points; a model
without a padding token pads with its end-of-text token, masked out.

Words: the corpus comes split into words. A tokenizer that gives the same pieces for pre-split words as for the
joined text (BERT's WordPiece; GPT-2's with a prefix space) tokenizes the words; one that does not (SmolLM2's and
Gemma's drop the space before every word when given split words: the model would read "Thecatsat") tokenizes the
text joined by spaces, each piece assigned to its word by its character offsets.

Points and their types:

* ``tokens`` (default): one point per word piece; its type is the token string (``##ing``, ``Ġthe``), as Cai et
  al. count types;
* ``words``: one point per word of the corpus, the mean of its pieces' states; its type is the word;
* ``last-token``: one point per sentence, its last piece (specials excluded), typed as a token: the state a causal LM
  reads a sequence by, where Li et al. (2025) measure RankMe and α-ReQ across training.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..models import ModelUnavailableError
from . import TYPE_MODES
from .settings import BATCH_SIZE


@dataclass
class Encoder:
    name: str
    model: object  # a transformers PreTrainedModel
    tokenizer: object
    device: torch.device
    n_states: int  # hidden states returned: L + 1
    dim: int
    max_length: int  # word pieces per sequence, special tokens included
    split_words: bool = True  # whether pre-split words tokenize as the joined text does (module docstring)
    specials_added: tuple[str, ...] = ()  # the special tokens the tokenizer adds to a sentence ([CLS] … [SEP], <bos>)

    def tokenize(self, sentences: Sequence[list[str]], **kw):
        """(the tokenizer's encoding, each sequence's word index per piece: None for special tokens)."""
        if self.split_words:
            enc = self.tokenizer(
                list(sentences), is_split_into_words=True, truncation=True, max_length=self.max_length, **kw
            )
            return enc, [enc.word_ids(i) for i in range(len(sentences))]
        texts = [" ".join(words) for words in sentences]
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length, return_offsets_mapping=True, **kw)
        offsets = enc.pop("offset_mapping")
        offsets = offsets.tolist() if hasattr(offsets, "tolist") else offsets
        return enc, [words_of_pieces(words, spans) for words, spans in zip(sentences, offsets)]


def words_of_pieces(words: Sequence[str], spans: Sequence[Sequence[int]]) -> list[int | None]:
    """The word each piece of ``" ".join(words)`` belongs to, from the pieces' character spans: the word holding the
    piece's last character (a piece that is only the space before a word goes with that word); None for special
    tokens and padding (empty spans)."""
    import bisect

    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]]).tolist()
    out: list[int | None] = []
    for start, end in spans:
        if end <= start:
            out.append(None)
            continue
        j = bisect.bisect_right(starts, end - 1) - 1
        if end - 1 >= starts[j] + len(words[j]) and j + 1 < len(words):  # the space before the next word
            j += 1
        out.append(j)
    return out


def splits_like_text(tokenizer) -> bool:
    """Whether the tokenizer gives a second word the same pieces when the words come split as in the joined text
    (the first word may differ: GPT-2's prefix space)."""

    def added_by_second(split: bool) -> list[int]:
        if split:
            one, two = (
                tokenizer(words, is_split_into_words=True, add_special_tokens=False)["input_ids"]
                for words in (["the"], ["the", "cat"])
            )
        else:
            one, two = (tokenizer(text, add_special_tokens=False)["input_ids"] for text in ("the", "the cat"))
        return list(two[len(one) :])

    return added_by_second(True) == added_by_second(False)


def load_encoder(model, device: str | torch.device = "cpu") -> Encoder:
    """The transformer of ``model`` (a loader: :func:`isoflow.models.resolve.resolve_model`'s answer), its tokenizer
    taking words already split; checks that it returns hidden states."""
    from ..models.local import max_sequence_length

    device = torch.device(device)
    name = model.name
    model, tokenizer = model.transformer(device, split_words=True)
    if tokenizer.pad_token is None:  # GPT-2: pad with end-of-text; padding is masked out anyway
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"  # a causal LM's positions count from the left
    if not getattr(tokenizer, "is_fast", False):
        raise ModelUnavailableError(
            f"{name}: its tokenizer is not a fast tokenizer; word ids (needed to group pieces) are unavailable"
        )
    model.eval()
    if getattr(model, "hf_device_map", None):  # spread over devices: the inputs go where the embeddings are
        device = model.get_input_embeddings().weight.device
    n_states, dim = hidden_state_shape(model, tokenizer, name, device)
    probe = tokenizer("the cat", return_special_tokens_mask=True)
    specials = tuple(
        tokenizer.convert_ids_to_tokens(i) for i, m in zip(probe["input_ids"], probe["special_tokens_mask"]) if m
    )
    length = max_sequence_length(model, tokenizer)
    return Encoder(name, model, tokenizer, device, n_states, dim, length, splits_like_text(tokenizer), specials)


def hidden_state_shape(model, tokenizer, name: str, device) -> tuple[int, int]:
    """(number of hidden states, their dim) from one probe; a clear error for a model that returns none."""
    probe = tokenizer([["probe"]], is_split_into_words=True, return_tensors="pt").to(device)
    with torch.no_grad():
        out = model(**probe, output_hidden_states=True)
    states = getattr(out, "hidden_states", None)
    if not states:
        raise ModelUnavailableError(
            f"{name}: the model returns no hidden states (output_hidden_states); it cannot be analysed per layer"
        )
    return len(states), int(states[-1].shape[-1])


def count_points(encoder: Encoder, words: list[str], mode: str = "tokens") -> int:
    """How many points a sentence gives (after truncation to the model's length), specials excluded."""
    enc, word_ids = encoder.tokenize([words], return_special_tokens_mask=True)
    special = enc["special_tokens_mask"][0]
    if mode in ("tokens", "last-token"):
        pieces = len(special) - sum(special)
        return pieces if mode == "tokens" else min(pieces, 1)
    return len({w for w in word_ids[0] if w is not None})


@dataclass
class Batch:
    """One batch of sentences' points: one float32 (points, dim) array per layer, the points' types, their positions
    in their sentence (0 for its first analysed token or word), their token ids (tokens mode; empty for words), how
    many special tokens were left out and how many positions the forward pass computed (sentences × the longest one's
    pieces: padding and specials included)."""

    layers: list[np.ndarray]
    types: list[str]
    positions: np.ndarray
    token_ids: np.ndarray
    n_special: int
    n_positions: int


# A forward pass computes every sentence at its longest one's length. A batch's sentences go through the model in
# groups of similar lengths (forward_groups), each of at most its batch size × POSITIONS_PER_SENTENCE positions, so
# that a long sentence neither makes its batch's short ones pay for its length (Brown's batches of 32 in corpus order
# computed 2.85 positions a point: docs/performance.md) nor sets the batch's memory; a split must save
# FORWARD_POSITIONS positions a pass, above a pass's fixed cost in positions (benchmarks/forward_cost.py: 7.3 on the
# 1B shape in bf16 on 2 CPU cores, benchmarks/results/forward-cost.json; more on a small model, whose passes are
# mostly fixed costs)
POSITIONS_PER_SENTENCE = 64
FORWARD_POSITIONS = 64


def forward_groups(lengths: Sequence[int], max_positions: int, overhead: int = FORWARD_POSITIONS) -> list[list[int]]:
    """A batch's sentences (``lengths``: each one's pieces, special tokens included) grouped into forward passes: runs
    of the sentences sorted by length (longest first, then by index), chosen to compute the fewest positions plus
    ``overhead`` a pass, each pass at most ``max_positions`` positions (a sentence longer than that alone); each group
    its sentences' indices in the batch, ascending. A batch that gains nothing by a split is one group."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    longest = [lengths[i] for i in order]
    cost, cut = [0.0] + [math.inf] * len(order), [0] * (len(order) + 1)
    for j in range(1, len(order) + 1):  # the best grouping of the j longest: its last group order[i:j]
        for i in range(j):
            size = (j - i) * longest[i]
            if size <= max_positions or j - i == 1:
                if cost[i] + size + overhead < cost[j]:
                    cost[j], cut[j] = cost[i] + size + overhead, i
    groups, j = [], len(order)
    while j:
        groups.append(sorted(order[cut[j] : j]))
        j = cut[j]
    return groups[::-1]


def _lengths_and_groups(encoder: Encoder, chunk: Sequence[list[str]], batch_size: int) -> tuple[list, list]:
    """A batch's sentences' pieces (special tokens included) and its forward passes (:func:`forward_groups`)."""
    enc, _ = encoder.tokenize(chunk)
    lengths = [len(ids) for ids in enc["input_ids"]]
    return lengths, forward_groups(lengths, batch_size * POSITIONS_PER_SENTENCE)


def padded_positions(encoder: Encoder, sentences: Sequence[list[str]], *, batch_size: int = BATCH_SIZE) -> int:
    """The positions the forward passes of :func:`batches` compute over ``sentences``: each pass padded to its longest
    sentence, special tokens included — what the encoding's time grows with (a point is such a position less the
    padding and the specials; :mod:`isoflow.layers.timing`)."""
    total = 0
    for b0 in range(0, len(sentences), batch_size):
        lengths, groups = _lengths_and_groups(encoder, sentences[b0 : b0 + batch_size], batch_size)
        total += sum(len(g) * max(lengths[i] for i in g) for g in groups)
    return total


def batches(
    encoder: Encoder, sentences: Sequence[list[str]], *, batch_size: int = BATCH_SIZE, mode: str = "tokens"
) -> Iterator[Batch]:
    """The points of ``sentences``, a :class:`Batch` of ``batch_size`` sentences at a time (its points in the sentences'
    order, whatever passes computed them: :func:`forward_groups`), special tokens and padding excluded."""
    if mode not in TYPE_MODES:
        raise ValueError(f"types must be one of {', '.join(TYPE_MODES)}; got {mode!r}")
    for b0 in range(0, len(sentences), batch_size):
        chunk = sentences[b0 : b0 + batch_size]
        _, groups = _lengths_and_groups(encoder, chunk, batch_size)
        if len(groups) == 1:  # one pass over the batch as it is
            yield _forward(encoder, chunk, mode)[0]
            continue
        yield _in_order([(g, *_forward(encoder, [chunk[i] for i in g], mode)) for g in groups], len(chunk))


def _in_order(parts: list[tuple[list[int], Batch, np.ndarray]], n: int) -> Batch:
    """One batch of ``n`` sentences from the passes that computed its groups (each: the sentences' indices, its
    :class:`Batch`, each sentence's points), every sentence's points put back in the sentences' order."""
    where: list = [None] * n  # each sentence's pass and the span of its points in it
    for group, batch, counts in parts:
        ends = np.cumsum(counts)
        for sentence, start, stop in zip(group, ends - counts, ends):
            where[sentence] = (batch, int(start), int(stop))
    spans = [(b, slice(lo, hi)) for b, lo, hi in where]
    layers = [np.concatenate([b.layers[k][span] for b, span in spans]) for k in range(len(parts[0][1].layers))]
    return Batch(
        layers,
        [t for b, span in spans for t in b.types[span]],
        np.concatenate([b.positions[span] for b, span in spans]),
        np.concatenate([b.token_ids[span] for b, span in spans]),  # words: none
        sum(b.n_special for _, b, _ in parts),
        sum(b.n_positions for _, b, _ in parts),
    )


def _forward(encoder: Encoder, chunk: Sequence[list[str]], mode: str) -> tuple[Batch, np.ndarray]:
    """One forward pass over ``chunk``'s sentences, padded to the longest: their points (a :class:`Batch`) and how
    many points each sentence gave."""
    enc, word_ids = encoder.tokenize(chunk, padding=True, return_special_tokens_mask=True, return_tensors="pt")
    special = enc.pop("special_tokens_mask").bool()
    inputs = {k: v.to(encoder.device) for k, v in enc.items()}
    with torch.no_grad():
        states = encoder.model(**inputs, output_hidden_states=True).hidden_states
    keep = enc["attention_mask"].bool() & ~special
    n_special = int((enc["attention_mask"].bool() & special).sum())
    n_positions = enc["attention_mask"].numel()
    # A model spread over devices has its states on several: what selects from them, once on each
    devices = {s.device for s in states}
    if mode in ("tokens", "last-token"):
        picked = keep
        if mode == "last-token":  # each row's last kept piece: the one with no kept piece after it
            picked = keep & (torch.cumsum(keep.int().flip(1), dim=1).flip(1) == 1)
        positions = (torch.cumsum(keep.int(), dim=1) - 1)[picked].numpy()
        ids = enc["input_ids"][picked]
        types = encoder.tokenizer.convert_ids_to_tokens(ids.tolist())
        masks = {d: picked.to(d) for d in devices}
        layers = [s[masks[s.device]].float().cpu().numpy() for s in states]
        counts = picked.sum(dim=1).numpy()
        return Batch(layers, types, positions, ids.numpy(), n_special, n_positions), counts
    # Mean of each word's pieces: a (words, pieces) averaging matrix per batch.
    rows, cols, types, word_positions = [], [], [], []
    counts = np.zeros(len(chunk), dtype=np.int64)
    flat = 0
    for i, wids in enumerate(word_ids):
        seen: dict[int, int] = {}
        for j, w in enumerate(wids):
            if w is None or not bool(keep[i, j]):
                continue
            if w not in seen:
                seen[w] = flat + len(seen)
                types.append(chunk[i][w])
                word_positions.append(w)
            rows.append(seen[w])
            cols.append(i * keep.shape[1] + j)
        flat += len(seen)
        counts[i] = len(seen)
    weight = torch.zeros(flat, keep.numel(), dtype=torch.float32)
    weight[rows, cols] = 1.0
    weight /= weight.sum(dim=1, keepdim=True)
    weights = {d: weight.to(d) for d in devices}
    layers = [(weights[s.device] @ s.float().reshape(-1, s.shape[-1])).cpu().numpy() for s in states]
    positions = np.asarray(word_positions, dtype=np.int64)
    return Batch(layers, types, positions, np.zeros(0, dtype=np.int64), n_special, n_positions), counts
