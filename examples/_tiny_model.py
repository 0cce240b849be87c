"""A tiny random BERT for the examples when no model folder is given (they then run anywhere, offline, in seconds)."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "the a film plot good bad dull funny is was not very and it i loved hated cast score long short fine story "
    "actors . ,"
).split()


def tiny_bert(folder: Path, labels: int = 2, words: list[str] = WORDS) -> Path:
    """A 2-layer BERT (hidden size 32) knowing ``words``, saved with ``save_pretrained`` (model and tokenizer)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(words)]
    tokenizer = BertTokenizerFast(
        vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True
    )  # vocab=, not vocab_file=
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=labels,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


TEXTS = [
    "a good film",
    "a very funny plot",
    "i loved the cast",
    "fine actors and a good story",
    "a bad film",
    "a dull plot",
    "i hated the long story",
    "it was not funny",
]
LABELS = [1, 1, 1, 1, 0, 0, 0, 0]
