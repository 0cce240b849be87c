"""The dynamics section's settings: its config key's schema (``dynamics``), declared once. None is a command-line
option: the section's runs are the layers command's, and its rules give that command the settings the two share
(``max_tokens``, ``kmeans_samples``, ``kmeans_starts``: :func:`isoflow.settings.command_line` with the layers'
settings class)."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import setting


@dataclass(frozen=True)
class DynamicsSettings:
    series: tuple[str, ...] = setting(
        (),
        "the models whose checkpoint series are measured: this config's pretrain models (every checkpoint each keeps: "
        "pretrain.training.checkpoints), or hub models and model folders of models: at the revisions below",
        cli=False,
    )
    revisions: tuple[str, ...] = setting(
        (),
        "the checkpoints of the series that are not this config's pretraining (a hub id's branches, e.g. Pythia's "
        "step0 ... step143000; a folder's checkpoint folders)",
        cli=False,
    )
    corpora: tuple[str, ...] = setting(("brown",), "the corpora every checkpoint is measured on", cli=False)
    points: tuple[str, ...] = setting(
        ("tokens",),
        "what a point is, each measured on its own: every word piece (tokens, as the layers section), or each "
        "sentence's last piece (last-token: Li et al.'s points, the state a causal LM reads a sequence by)",
        choices=("tokens", "last-token"),
        cli=False,
    )
    max_tokens: int = setting(
        20_000,
        "token states measured per checkpoint and layer (the same tokens at every checkpoint: the series is paired); "
        "fewer than the layers section's, as a series has tens of checkpoints",
        minimum=1,
        cli=False,
    )
    max_sequences: int = setting(
        5_000,
        "sentences measured per checkpoint and layer for the last-token points (one point each: Li et al.'s M "
        "sequences; the same sentences at every checkpoint)",
        minimum=2,
        cli=False,
    )
    kmeans_samples: int = setting(
        1, "K-means samples per checkpoint and layer (the layers section's, made cheap)", minimum=1, cli=False
    )
    kmeans_starts: int = setting(1, "K-means starts per sample", minimum=1, cli=False)
    cka_words: int = setting(
        5_000,
        "words (whole sentences in the seeded order) on which each checkpoint's layers are compared with the next "
        "checkpoint's and the last's (linear CKA; the layers section's cross_words)",
        minimum=4,
        cli=False,
    )
