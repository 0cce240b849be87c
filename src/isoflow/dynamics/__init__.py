"""Geometry across training: every checkpoint of a model's series measured layer by layer, on the same tokens at every
checkpoint, so that the series is paired (issue "Geometry across training"; docs/pretrain.md, "A checkpoint series").

A series is a model the config knows at a list of revisions (:func:`series_checkpoints`): one of this config's own
pretraining runs at every checkpoint it keeps (``pretrain --checkpoints N``: the schedule is
:func:`isoflow.checkpoints.checkpoint_steps` of its settings, known before it trains, so that the workflow plans every
job at once), or a hub model or model folder at the revisions the config lists (Pythia's ``step0`` … ``step143000``).
The workflow measures each checkpoint × corpus × kind of point (``dynamics.points``: every token, or each sentence's
last) as one job (the layers section's measures, made cheaper: :class:`~isoflow.dynamics.settings.DynamicsSettings`), at
``runs/<series>/<corpus>/<points>/<revision>/`` (:class:`isoflow.dynamics.runs.Measurement`). Each checkpoint's layers
are also compared with the next checkpoint's and with the last's (linear CKA on the same words,
:func:`checkpoint_pairs`: one ``isoflow layers-cross`` job a pair, at
``runs/cka/<series>/<corpus>/<revision>/<later>/``, :class:`isoflow.dynamics.runs.Comparison`).

Examples
--------
>>> from isoflow.dynamics import series_checkpoints
>>> pretrained = {"plain-gpt2": {"steps": 10, "checkpoints": 4}}
>>> checkpoints = series_checkpoints({"series": ["plain-gpt2"]}, pretrained)
>>> checkpoints
[('plain-gpt2', 'step0'), ('plain-gpt2', 'step1'), ('plain-gpt2', 'step2'), ('plain-gpt2', 'step10')]
>>> checkpoint_pairs(checkpoints)  # (series, earlier, later): each with the next, then each with the last
[('plain-gpt2', 'step0', 'step1'), ('plain-gpt2', 'step1', 'step2'), ('plain-gpt2', 'step2', 'step10'), \
('plain-gpt2', 'step0', 'step10'), ('plain-gpt2', 'step1', 'step10')]
"""

from __future__ import annotations

from ..checkpoints import checkpoint_steps, revision

# What `isoflow dynamics-report` writes, whatever the runs: the workflow declares them from here.
REPORT_TABLES = ("dynamics", "dynamics_cka", "dynamics_readings")
REPORT_FIGURES = ("dynamics_measures", "dynamics_cka", "dynamics_heatmaps")


class SeriesError(ValueError):
    """A series the config cannot expand into checkpoints (the message names the key and the fix)."""


def series_checkpoints(dynamics: dict, pretrained: dict[str, dict], where: str = "dynamics") -> list[tuple[str, str]]:
    """(series, revision) of every checkpoint a config's ``dynamics`` section measures, in its series' order: a
    pretraining run of the config (``pretrained``: name -> its settings, shared ones included) at each step its
    series keeps; any other model at ``dynamics.revisions``. A pretraining run that keeps no series, or another model
    without revisions, is refused in one line."""
    found = []
    for name in dynamics.get("series") or ():
        if name in pretrained:
            settings = pretrained[name]
            if not settings.get("checkpoints"):
                raise SeriesError(
                    f"{where}.series: {name} keeps no checkpoint series; set pretrain.training.checkpoints (or its "
                    f"pretrain.models.{name}.checkpoints), e.g. 20"
                )
            found += [(name, revision(s)) for s in checkpoint_steps(settings["steps"], settings["checkpoints"])]
        elif dynamics.get("revisions"):
            found += [(name, r) for r in dynamics["revisions"]]
        else:
            raise SeriesError(
                f"{where}.series: {name} is not a pretraining run of this config, so its checkpoints must be listed; "
                f"give {where}.revisions (e.g. [step0, step1000])"
            )
    return found


def checkpoint_pairs(checkpoints: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(series, earlier, later) of every pair of ``checkpoints`` (:func:`series_checkpoints`' pairs, in each series'
    order) whose layers are compared: each checkpoint with the next (how much one stretch of training moved each
    layer), then each with the last but the one before it, compared already (how far each layer still was from where
    it ends); each pair once."""
    series: dict[str, list[str]] = {}
    for name, rev in checkpoints:
        series.setdefault(name, []).append(rev)
    pairs = []
    for name, revisions in series.items():
        pairs += [(name, a, b) for a, b in zip(revisions, revisions[1:])]
        pairs += [(name, a, revisions[-1]) for a in revisions[:-2]]
    return pairs
