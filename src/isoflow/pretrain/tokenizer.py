"""Tokenizers trained on the pretraining corpus with Hugging Face ``tokenizers``, saved as the ``transformers``
classes the original models use, so that ``AutoTokenizer`` loads them like BERT's and GPT-2's:

* ``wordpiece`` (the masked model, as BERT uncased): lower-cased, accents stripped, split at white space and
  punctuation, WordPiece with ``##`` continuations; specials ``[PAD] [UNK] [CLS] [SEP] [MASK]``;
  saved as :class:`transformers.BertTokenizer`.
  ``tokenizers``' own ``WordPieceTrainer`` gives another vocabulary on every call (it numbers the ``##`` tokens in
  hash-map order, and that order breaks ties between merges: huggingface/tokenizers#1794), so the vocabulary is
  trained as WordPiece is defined — BPE over words, a word's first character apart from its continuations — with
  the continuations written as private-use characters, whose numbering is sorted and therefore fixed.
* ``bpe`` (the causal model, as GPT-2): byte-level BPE over GPT-2's pre-tokenisation, cased, no unknown token;
  the one special ``<|endoftext|>``; saved as :class:`transformers.GPT2Tokenizer`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

KINDS = ("wordpiece", "bpe")
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
EOT = "<|endoftext|>"


def train_tokenizer(kind: str, sentences: Iterable[str], vocab_size: int, max_length: int):
    """A ``transformers`` tokenizer of ``kind`` trained on ``sentences`` (the same vocabulary for the same input)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    sentences = list(sentences)
    if kind == "wordpiece":
        from transformers import BertTokenizer

        return BertTokenizer(
            vocab=wordpiece_vocabulary(sentences, vocab_size), do_lower_case=True, model_max_length=max_length
        )
    if kind == "bpe":
        from transformers import GPT2Tokenizer

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(
            sentences,
            trainers.BpeTrainer(
                vocab_size=vocab_size,
                special_tokens=[EOT],
                show_progress=False,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            ),
        )
        model = json.loads(tok.to_str())["model"]
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
        return GPT2Tokenizer(vocab=model["vocab"], merges=merges, model_max_length=max_length)
    raise ValueError(f"tokenizer kind must be one of {', '.join(KINDS)}; got {kind!r}")


CONTINUATION = "##"
PRIVATE_USE = ((0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))  # Unicode's supplementary private-use planes


def wordpiece_vocabulary(sentences: list[str], vocab_size: int) -> dict[str, int]:
    """WordPiece's vocabulary (token -> id) of at most ``vocab_size`` tokens: the specials, the characters, the
    continuation characters (``##c``), then BPE's merges within words, after BERT uncased's normalisation and
    pre-tokenisation. Trained by ``tokenizers``' BPE trainer (deterministic) over words whose non-initial characters
    are private-use stand-ins, so that ``c`` and ``##c`` are two symbols with fixed ids, as WordPiece needs."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    normalizer, splitter = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    words = [[w for w, _ in splitter.pre_tokenize_str(normalizer.normalize_str(s))] for s in sentences]
    alphabet = sorted({c for sentence in words for w in sentence for c in w[1:]})
    stand_ins = [chr(c) for lo, hi in PRIVATE_USE for c in range(lo, hi + 1)]
    if len(alphabet) > len(stand_ins):
        raise ValueError(
            f"the corpus has {len(alphabet):,} distinct characters inside words; WordPiece training here takes at most "
            f"{len(stand_ins):,}"
        )
    inside = {c: stand_ins[i] for i, c in enumerate(alphabet)}
    original = {v: k for k, v in inside.items()}
    cache: dict[str, str] = {}

    def marked(word: str) -> str:
        if word not in cache:
            cache[word] = word[0] + "".join(inside[c] for c in word[1:])
        return cache[word]

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(
        (" ".join(marked(w) for w in sentence) for sentence in words),
        trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(BERT_SPECIALS), show_progress=False),
    )

    def unmarked(token: str) -> str:
        if token[0] in original:
            return CONTINUATION + "".join(original[c] for c in token)
        return "".join(original.get(c, c) for c in token)

    return {unmarked(token): i for token, i in tok.get_vocab().items()}


def document_separator(tokenizer) -> int:
    """The token put between documents when text is packed: [SEP] (BERT) or <|endoftext|> (GPT-2)."""
    return tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
