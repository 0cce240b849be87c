"""The model fine-tuned: a sentence encoder's transformer with mean pooling (as sentence-transformers builds it, without
its final normalisation), and a classification head as BERT's (dense, tanh, dropout, linear) on the pooled output.

Pair tasks are encoded as one sequence (``[CLS] a [SEP] b [SEP]``), as BERT-style models are fine-tuned on GLUE.
The pooled output is the mean of the last layer's states over the non-padding tokens (the same vectors as
``SentenceTransformer.encode`` before its ``Normalize``, tested to 1e-5).
"""

from __future__ import annotations

import torch

from .settings import POINTS


class SentenceEncoder(torch.nn.Module):
    """A transformer with mean pooling: from a sentence-transformers model (``SentenceEncoder(st)``, mean pooling only),
    or from a Hugging Face model and tokenizer (:meth:`from_transformer`)."""

    def __init__(self, st_model=None, *, transformer=None, tokenizer=None, max_length: int | None = None):
        super().__init__()
        if st_model is not None:
            modules = list(st_model)
            transformer, tokenizer, max_length = (
                modules[0].auto_model,
                modules[0].tokenizer,
                int(st_model.max_seq_length),
            )
            pooling = [m for m in modules if type(m).__name__ == "Pooling"]
            mode = pooling[0].get_config_dict().get("pooling_mode") if pooling else None
            if mode != "mean":
                raise ValueError(
                    f"pooling {mode!r} is not supported for fine-tuning (mean pooling only: all-MiniLM-L6-v2, "
                    f"all-mpnet-base-v2)"
                )
        self.transformer, self.tokenizer, self.max_length = transformer, tokenizer, int(max_length)
        self.dim = int(self.transformer.config.hidden_size)

    @classmethod
    def from_transformer(cls, model, tokenizer) -> SentenceEncoder:
        from ..models.local import max_sequence_length

        return cls(transformer=model, tokenizer=tokenizer, max_length=max_sequence_length(model, tokenizer))

    def tokenize(self, a: list[str], b: list[str] | None, device) -> dict[str, torch.Tensor]:
        """One sequence per example (pairs: ``a`` and ``b`` in one sequence), padded to the batch's longest."""
        enc = self.tokenizer(a, b, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        return {k: v.to(device) for k, v in enc.items()}

    def forward(self, inputs: dict[str, torch.Tensor], hidden_states: bool = False):
        """(pooled output (B, d), the hidden states of every layer or None, the attention mask (B, T))."""
        out = self.transformer(**inputs, output_hidden_states=hidden_states, return_dict=True)
        mask = inputs["attention_mask"]
        m = mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
        pooled = (out.last_hidden_state * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
        return pooled, (out.hidden_states if hidden_states else None), mask


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
    """The points a regulariser sees: every layer's token states but the embedding layer's (``tokens-all-layers``,
    I-STAR's choice; its code keeps padding, we drop it), the last layer's (``tokens-last-layer``), or the pooled
    outputs (``pooled``)."""
    from ..istar import points_of

    if kind == "pooled":
        return pooled
    if kind == "tokens-last-layer":
        return points_of(states[-1], mask)
    if kind == "tokens-all-layers":
        return points_of(list(states[1:]), mask)
    raise ValueError(f"points must be one of {', '.join(POINTS)}; got {kind!r}")
