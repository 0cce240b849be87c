"""The pretraining section's settings, declared once (the command line, the config schema and the checks derive from
them); kept apart from the training code so that reading them does not load torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..settings import check, setting

REPORT_TABLES = ("pretrain",)  # what `isoflow pretrain-report` writes: the workflow declares them from here
REPORT_FIGURES = ("pretrain_curves",)

OBJECTIVES = ("masked", "causal")
TOKENIZER_OF = {"masked": "wordpiece", "causal": "bpe"}


@dataclass(frozen=True)
class CorpusSettings:
    """How the pretraining corpus is split."""

    heldout_fraction: float = setting(
        0.02,
        "fraction of each source's documents held out for evaluation",
        exclusive_minimum=0.0,
        exclusive_maximum=0.5,
    )
    seed: int = setting(0, "seed of the held-out documents' choice", minimum=0)

    def __post_init__(self):
        check(self)


@dataclass(frozen=True)
class PretrainSettings:
    """A pretraining run: the model's size, the optimisation and the evaluation."""

    objective: str = setting(
        "masked", "masked (BERT-style, WordPiece) or causal (GPT-2-style, byte-level BPE)", choices=OBJECTIVES
    )
    layers: int = setting(4, "transformer blocks", minimum=1)
    hidden: int = setting(256, "hidden size", minimum=8)
    heads: int = setting(4, "attention heads (must divide --hidden)", minimum=1)
    ffn: int = setting(1024, "feed-forward inner size", minimum=8)
    seq_len: int = setting(128, "tokens per training sequence (also the model's longest input)", minimum=16)
    vocab_size: int = setting(8192, "tokenizer vocabulary (the same for both objectives)", minimum=300)
    steps: int = setting(4000, "optimisation steps", minimum=1)
    batch_size: int = setting(32, "sequences per step", minimum=1)
    lr: float = setting(5e-4, "peak AdamW learning rate", exclusive_minimum=0.0)
    warmup: float = setting(
        0.06, "fraction of the steps spent warming up the learning rate", minimum=0.0, exclusive_maximum=1.0
    )
    weight_decay: float = setting(0.01, "AdamW weight decay (matrices only)", minimum=0.0)
    dropout: float = setting(0.1, "dropout in the transformer", minimum=0.0, exclusive_maximum=1.0)
    mask_probability: float = setting(
        0.15, "share of tokens a masked model predicts", exclusive_minimum=0.0, exclusive_maximum=1.0
    )
    seed: int = setting(0, "seeds the initialisation, the batch order, the masks and dropout", minimum=0)
    eval_every: int = setting(250, "steps between held-out evaluations", minimum=1)
    eval_sequences: int = setting(512, "held-out sequences scored (at most)", minimum=1)
    checkpoint_every: int = setting(250, "steps between the resumable state's saves", minimum=1)
    checkpoints: int = setting(
        0,
        "a series of this many checkpoints at most, log-spaced as Pythia's (0, 1, 2, 4, ..., then evenly spaced to the "
        "last step), each a model folder in checkpoints/step<N>/ (0: none; else at least 2)",
        minimum=0,
        quiet_at_default=True,
    )
    log_every: int = setting(50, "steps per point of the training-loss curve", minimum=1)

    def model_shape(self):
        """The shape of the model these settings build (:func:`isoflow.models.shapes.transformer_shape`), known
        before it is trained: what a workflow plans its layer runs from."""
        from ..models.shapes import transformer_shape  # here: the models package loads numpy, the settings need not

        return transformer_shape(
            vocab=self.vocab_size, dim=self.hidden, layers=self.layers, ffn=self.ffn, positions=self.seq_len
        )

    def __post_init__(self):
        check(self)
        if self.checkpoints == 1:
            raise ValueError("checkpoints must be 0 (none) or at least 2 (the first and the last step)")
        if self.hidden % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden ({self.hidden})")

    def training_fields(self) -> dict:
        """What a resumed run must share with its checkpoint (evaluation and checkpoint cadence may change)."""
        skip = {"eval_every", "checkpoint_every", "log_every", "eval_sequences", "checkpoints"}
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in skip}
