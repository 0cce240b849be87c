"""Tokenizers trained on the pretraining corpus with Hugging Face ``tokenizers``, saved as the ``transformers``
classes the original models use, so that ``AutoTokenizer`` loads them like BERT's and GPT-2's:

* ``wordpiece`` (the masked model, as BERT uncased): lower-cased, accents stripped, split at white space and
  punctuation, WordPiece with ``##`` continuations; specials ``[PAD] [UNK] [CLS] [SEP] [MASK]``;
  saved as :class:`transformers.BertTokenizer`.
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
    """A ``transformers`` tokenizer of ``kind`` trained on ``sentences`` (deterministic for the same input)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    sentences = list(sentences)
    if kind == "wordpiece":
        from transformers import BertTokenizer

        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.train_from_iterator(sentences, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(BERT_SPECIALS),
                                                                    show_progress=False))
        return BertTokenizer(vocab=tok.get_vocab(), do_lower_case=True, model_max_length=max_length)
    if kind == "bpe":
        from transformers import GPT2Tokenizer

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(sentences, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT], show_progress=False,
                                                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        model = json.loads(tok.to_str())["model"]
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
        return GPT2Tokenizer(vocab=model["vocab"], merges=merges, model_max_length=max_length)
    raise ValueError(f"tokenizer kind must be one of {', '.join(KINDS)}; got {kind!r}")


def document_separator(tokenizer) -> int:
    """The token put between documents when text is packed: [SEP] (BERT) or <|endoftext|> (GPT-2)."""
    return tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
