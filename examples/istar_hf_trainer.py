"""I-STAR with the Hugging Face Trainer: a Trainer subclass whose loss adds λ·(1 − IsoScore*) of every layer's token
states, and a callback that refreshes the reference covariance Σ_S from the training set at each epoch's start.

    python examples/istar_hf_trainer.py                      # a tiny random BERT, built on the spot
    python examples/istar_hf_trainer.py path/to/hf-model     # any Hugging Face sequence-classification folder
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments

from isoflow import IStarLoss

sys.path.insert(0, str(Path(__file__).parent))
from _tiny_model import LABELS, TEXTS, tiny_bert  # noqa: E402


class IStarTrainer(Trainer):
    """A Trainer whose loss is the model's loss plus I-STAR's penalty on the hidden states of every layer."""

    def __init__(self, *args, istar: IStarLoss, **kwargs):
        super().__init__(*args, **kwargs)
        self.istar = istar

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs, output_hidden_states=True)
        penalty = self.istar(outputs.hidden_states[1:], inputs["attention_mask"])
        loss = outputs.loss + penalty
        return (loss, outputs) if return_outputs else loss


class RefreshReference(TrainerCallback):
    """Σ_S from the current model at the start of every epoch, without gradients (as I-STAR's code does)."""

    def __init__(self, istar: IStarLoss, dataset, collate):
        self.istar, self.dataset, self.collate = istar, dataset, collate

    def on_epoch_begin(self, args, state, control, model=None, **kwargs):
        self.istar.reset_reference()
        was = model.training
        model.eval()
        with torch.no_grad():
            for i in range(0, len(self.dataset), 16):
                batch = self.collate([self.dataset[j] for j in range(i, min(i + 16, len(self.dataset)))])
                batch = {k: v.to(model.device) for k, v in batch.items() if k != "labels"}
                self.istar.update_reference(
                    model(**batch, output_hidden_states=True).hidden_states[1:], batch["attention_mask"]
                )
        model.train(was)


def train(
    model_dir: str | None = None, out_dir: str | None = None, istar_lambda: float = -1.0, max_steps: int = 4
) -> list[dict]:
    if model_dir is None:
        model_dir = tiny_bert(Path(tempfile.mkdtemp()) / "tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2)
    dataset = [{**tokenizer(t), "labels": y} for t, y in zip(TEXTS, LABELS)]

    def collate(rows):
        batch = tokenizer.pad([{k: v for k, v in r.items() if k != "labels"} for r in rows], return_tensors="pt")
        batch["labels"] = torch.tensor([r["labels"] for r in rows])
        return batch

    istar = IStarLoss(istar_lambda=istar_lambda, zeta=0.2)
    args = TrainingArguments(
        output_dir=out_dir or tempfile.mkdtemp(),
        per_device_train_batch_size=4,
        learning_rate=1e-4,
        weight_decay=0.0,
        max_steps=max_steps,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    trainer = IStarTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        data_collator=collate,
        istar=istar,
        callbacks=[RefreshReference(istar, dataset, collate)],
    )
    trainer.train()
    return [row for row in trainer.state.log_history if "loss" in row]


if __name__ == "__main__":
    for row in train(sys.argv[1] if len(sys.argv) > 1 else None):
        print(row)
