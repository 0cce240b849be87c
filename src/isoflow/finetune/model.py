"""A sentence encoder as sentence-transformers builds it (transformer, mean pooling, optional normalisation), as a
trainable module that also returns the transformer's hidden states, plus the task's linear head.

Same embeddings as ``SentenceTransformer.encode`` (tested to 1e-5): the transformer is the model's own
``auto_model`` and tokenizer (same maximum length); pooling is the mean over non-padding tokens; the output is
L2-normalised when the model has a ``Normalize`` module (all-MiniLM-L6-v2 and all-mpnet-base-v2 do).
"""

from __future__ import annotations

import torch


class SentenceEncoder(torch.nn.Module):
    def __init__(self, st_model):
        super().__init__()
        modules = list(st_model)
        self.transformer = modules[0].auto_model
        self.tokenizer = modules[0].tokenizer
        pooling = [m for m in modules if type(m).__name__ == "Pooling"]
        mode = pooling[0].get_config_dict().get("pooling_mode") if pooling else None
        if mode != "mean":
            raise ValueError(f"pooling {mode!r} is not supported for fine-tuning (mean pooling only: all-MiniLM-L6-v2, all-mpnet-base-v2)")
        self.normalize = any(type(m).__name__ == "Normalize" for m in modules)
        self.max_length = int(st_model.max_seq_length)
        self.dim = int(self.transformer.config.hidden_size)

    def tokenize(self, texts: list[str], device) -> dict[str, torch.Tensor]:
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        return {k: v.to(device) for k, v in enc.items()}

    def forward(self, inputs: dict[str, torch.Tensor], hidden_states: bool = False):
        """(sentence embeddings (B, d), the hidden states of every layer or None, the attention mask)."""
        out = self.transformer(**inputs, output_hidden_states=hidden_states, return_dict=True)
        mask = inputs["attention_mask"].unsqueeze(-1).to(out.last_hidden_state.dtype)
        emb = (out.last_hidden_state * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        if self.normalize:
            emb = torch.nn.functional.normalize(emb, p=2, dim=1)
        return emb, (out.hidden_states if hidden_states else None), inputs["attention_mask"]

    def encode(self, texts: list[str], device, batch_size: int = 64) -> torch.Tensor:
        """Embeddings of ``texts`` without gradients, in batches (memory bounded by the batch)."""
        was = self.training
        self.eval()
        parts = []
        with torch.no_grad():
            for i in range(0, len(texts), batch_size):
                parts.append(self(self.tokenize(texts[i : i + batch_size], device))[0].float())
        self.train(was)
        return torch.cat(parts) if parts else torch.empty(0, self.dim, device=device)


def token_points(states, mask: torch.Tensor) -> torch.Tensor:
    """The token states of every layer but the embedding layer's, padding removed: the I-STAR code's point cloud
    (which keeps padding; we do not)."""
    keep = mask.bool()
    return torch.cat([s[keep] for s in states[1:]], dim=0)
