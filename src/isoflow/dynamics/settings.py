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
    max_tokens: int = setting(
        20_000,
        "token states measured per checkpoint and layer (the same tokens at every checkpoint: the series is paired); "
        "fewer than the layers section's, as a series has tens of checkpoints",
        minimum=1,
        cli=False,
    )
    kmeans_samples: int = setting(
        1, "K-means samples per checkpoint and layer (the layers section's, made cheap)", minimum=1, cli=False
    )
    kmeans_starts: int = setting(1, "K-means starts per sample", minimum=1, cli=False)
