"""I-STAR in your own PyTorch training loop: the penalty on every layer's token states (padding masked), its
reference covariance Σ_S refreshed from the training set at the start of every epoch, as Rudman & Eickhoff do.

    python examples/istar_plain_loop.py                      # a tiny random BERT, built on the spot
    python examples/istar_plain_loop.py path/to/hf-model     # any Hugging Face sequence-classification folder
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from isoflow import IStarLoss

sys.path.insert(0, str(Path(__file__).parent))
from _tiny_model import LABELS, TEXTS, tiny_bert  # noqa: E402


def train(
    model_dir: str | None = None, epochs: int = 2, istar_lambda: float = -1.0, zeta: float = 0.2, seed: int = 0
) -> list[dict]:
    """Fine-tune with loss = cross-entropy + λ·(1 − IsoScore*); returns one dict per step (loss, penalty)."""
    if model_dir is None:
        model_dir = tiny_bert(Path(tempfile.mkdtemp()) / "tiny-bert")
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    istar = IStarLoss(istar_lambda=istar_lambda, zeta=zeta)
    batches = [(TEXTS[i : i + 4], LABELS[i : i + 4]) for i in range(0, len(TEXTS), 4)]
    log = []
    for epoch in range(epochs):
        istar.reset_reference()  # Σ_S from the current model: every layer's token states of the training set
        model.eval()
        with torch.no_grad():
            for texts, _ in batches:
                inputs = tokenizer(texts, padding=True, return_tensors="pt")
                states = model(**inputs, output_hidden_states=True).hidden_states
                istar.update_reference(states[1:], inputs["attention_mask"])
        model.train()
        for texts, labels in batches:
            inputs = tokenizer(texts, padding=True, return_tensors="pt")
            out = model(**inputs, labels=torch.tensor(labels), output_hidden_states=True)
            penalty = istar(
                out.hidden_states[1:], inputs["attention_mask"]
            )  # every layer but the embeddings, no padding
            loss = out.loss + penalty
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            log.append({"epoch": epoch, "loss": float(out.loss), "penalty": float(penalty)})
    return log


if __name__ == "__main__":
    for row in train(sys.argv[1] if len(sys.argv) > 1 else None):
        print(row)
