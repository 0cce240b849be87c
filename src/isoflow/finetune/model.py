"""The model fine-tuned: a transformer with a pooling of its last layer's states, and a classification head as BERT's
(dense, tanh, dropout, linear) on the pooled output.

Pooling (``pooling``):

* ``mean`` — the mean of the last layer's states over the non-padding tokens: a sentence encoder's (the same vectors as
  ``SentenceTransformer.encode`` before its ``Normalize``, tested to 1e-5), and any encoder folder's;
* ``last`` — the last non-padding token's state: a causal LM's (GPT-2, Llama, Gemma), whose last token is the only one
  that has read the whole sentence; what transformers' ``*ForSequenceClassification`` heads of those models read.
  Sequences are padded on the right (a Llama-style model numbers positions from the left); the index of the last
  non-padding token is found from the attention mask, so left padding would pick the right token too;
* ``auto`` (the default) — ``last`` for a causal LM (its configuration's architecture ends in ``ForCausalLM`` or
  ``LMHeadModel``, or it is a decoder), ``mean`` otherwise.

Pair tasks are encoded as one sequence (``[CLS] a [SEP] b [SEP]``), as BERT-style models are fine-tuned on GLUE.

Precision (``precision``): ``float32``, or ``bf16`` — the transformer's forward pass under bfloat16 autocast (a GPU's
tensor cores; the CPU runs it too), its outputs cast back to float32, so that the pooling, the head, the loss, the
I-STAR penalty (its covariance and eigenvalues) and every metric stay float32 or float64.
"""

from __future__ import annotations

import torch

from ..models.loaders import (  # noqa: F401  (DECODER_TYPES, is_causal_lm: here before they moved)
    DECODER_TYPES,
    TrainableParts,
    is_causal_lm,
    sentence_transformer_parts,
    transformer_parts,
)


def last_token_index(mask: torch.Tensor) -> torch.Tensor:
    """Per row of an attention mask (B, T), the position of its last non-padding token (right or left padding).

    >>> last_token_index(torch.tensor([[1, 1, 1, 0], [0, 1, 1, 1], [1, 0, 0, 0]])).tolist()
    [2, 3, 0]"""
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return (mask.to(positions.dtype) * positions).argmax(dim=1)


class SentenceEncoder(torch.nn.Module):
    """A transformer with a pooling (module docstring), from the parts a model's loader gives
    (:meth:`isoflow.models.loaders.Loader.trainable`); or from a SentenceTransformer (its mean pooling only) or a
    Hugging Face model and tokenizer in hand."""

    precision = "float32"  # or "bf16": the transformer under bfloat16 autocast, what comes out of it float32

    def __init__(self, parts: TrainableParts):
        super().__init__()
        self.transformer, self.tokenizer = parts.model, parts.tokenizer
        self.max_length, self.pooling = int(parts.max_length), parts.pooling
        self.dim = int(self.transformer.config.hidden_size)

    @classmethod
    def from_sentence_transformer(cls, st) -> SentenceEncoder:
        """A SentenceTransformer's transformer with its mean pooling."""
        return cls(sentence_transformer_parts(st))

    @classmethod
    def from_transformer(cls, model, tokenizer, pooling: str = "auto") -> SentenceEncoder:
        """A Hugging Face model with ``pooling`` (``auto``: ``last`` for a causal LM, else ``mean``)."""
        return cls(transformer_parts(model, tokenizer, pooling))

    def tokenize(self, a: list[str], b: list[str] | None, device) -> dict[str, torch.Tensor]:
        """One sequence per example (pairs: ``a`` and ``b`` in one sequence), padded to the batch's longest."""
        enc = self.tokenizer(a, b, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        return {k: v.to(device) for k, v in enc.items()}

    def forward(self, inputs: dict[str, torch.Tensor], hidden_states: bool = False):
        """(pooled output (B, d), the hidden states of every layer or None, the attention mask (B, T))."""
        device_type = inputs["input_ids"].device.type
        with torch.autocast(device_type, dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            out = self.transformer(**inputs, output_hidden_states=hidden_states, return_dict=True)
        mask = inputs["attention_mask"]
        last = out.last_hidden_state.float()  # pooling, head, penalty and metrics in float32 whatever the precision
        states = tuple(h.float() for h in out.hidden_states) if hidden_states else None
        if self.pooling == "last":
            pooled = last[torch.arange(last.shape[0], device=last.device), last_token_index(mask)]
        else:
            m = mask.unsqueeze(-1).to(last.dtype)
            pooled = (last * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
        return pooled, states, mask


def load_encoder(resolved, pooling: str, device) -> SentenceEncoder:
    """The encoder to fine-tune for a resolved model (isoflow.models.resolve): what its loader gives to train, with
    ``pooling`` (a sentence-transformers model keeps its own mean pooling)."""
    return SentenceEncoder(resolved.trainable(device, pooling))


class ClassificationHead(torch.nn.Module):
    """BERT's sequence-classification head on a pooled vector: dense (d → d), tanh, dropout, linear (d → k)."""

    def __init__(self, dim: int, n_labels: int, dropout: float = 0.1):
        super().__init__()
        self.dense = torch.nn.Linear(dim, dim)
        self.dropout = torch.nn.Dropout(dropout)
        self.out = torch.nn.Linear(dim, n_labels)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(torch.tanh(self.dense(pooled))))


def penalty_points(kind: str, pooled: torch.Tensor, states, mask: torch.Tensor) -> torch.Tensor:
    """The points a regulariser sees under recipe ``kind`` (:func:`isoflow.istar.penalty_points`)."""
    from ..istar import penalty_points as of_recipe

    return of_recipe(kind, states, mask, pooled)
