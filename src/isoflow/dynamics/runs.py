"""The dynamics section's runs, each one value (:class:`isoflow.layout.RunId`): the rules name their outputs with
these, the report reads its folders back with them.

* :class:`Measurement` — one checkpoint of a series measured on a corpus's points (a layers analysis):
  ``runs/<series>/<corpus>/<points>/<revision>/``;
* :class:`Comparison` — one checkpoint's layers compared with a later checkpoint's (a layers-cross analysis, linear
  CKA on the same words): ``runs/cka/<series>/<corpus>/<revision>/<later>/``.

Examples
--------
>>> from isoflow.dynamics.runs import Comparison, Measurement
>>> Measurement("plain-gpt2-seed1", "brown", "last-token", "step400").path("results")
'results/dynamics/runs/plain-gpt2-seed1/brown/last-token/step400'
>>> Measurement("plain-gpt2-seed1", "brown", "last-token", "step400").model
'plain-gpt2'
>>> Comparison.read("cka/plain-gpt2/brown/step0/step400")
Comparison(series='plain-gpt2', corpus='brown', revision='step0', later='step400')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ..checkpoints import pretrained_runs
from ..layout import RunId
from . import checkpoint_pairs, series_checkpoints

MEASURED = "layers.parquet"  # the file a measurement's job is asked for (its folder's other files come with it)
COMPARED = "cross.parquet"  # the same for a comparison's
SEED_OF_SERIES = re.compile(r"-seed\d+$")  # a series named <model>-seed<N> is a seed of <model> (the configs' names)
COMPARISONS = "cka"  # the folder of the comparisons, beside the series' folders (never a series' name: WILDCARDS)


@dataclass(frozen=True)
class Measurement(RunId):
    """One checkpoint × corpus × kind of point, measured layer by layer."""

    SECTION: ClassVar[str] = "dynamics"
    TEMPLATE: ClassVar[str] = "{series}/{corpus}/{points}/{revision}"
    series: str
    corpus: str
    points: str
    revision: str

    @property
    def model(self) -> str:
        """What the series is a seed of: its name without ``-seed<N>``."""
        return SEED_OF_SERIES.sub("", self.series)


@dataclass(frozen=True)
class Comparison(RunId):
    """One checkpoint's layers against a later checkpoint's of the same series, on a corpus's words."""

    SECTION: ClassVar[str] = "dynamics"
    TEMPLATE: ClassVar[str] = COMPARISONS + "/{series}/{corpus}/{revision}/{later}"
    series: str
    corpus: str
    revision: str
    later: str


def measurements(dynamics: dict, pretrained: dict[str, dict]) -> list[Measurement]:
    """Every checkpoint x corpus x kind of point a config's ``dynamics`` section (its defaults filled in) measures, in
    its series' order (``pretrained``: :func:`isoflow.checkpoints.pretrained_runs`)."""
    return [
        Measurement(series, corpus, points, revision)
        for series, revision in series_checkpoints(dynamics, pretrained)
        for corpus in dynamics.get("corpora", [])
        for points in dynamics.get("points", [])
    ]


def comparisons(dynamics: dict, pretrained: dict[str, dict]) -> list[Comparison]:
    """Every comparison of two checkpoints x corpus (:func:`isoflow.dynamics.checkpoint_pairs`) it makes."""
    return [
        Comparison(series, corpus, earlier, later)
        for series, earlier, later in checkpoint_pairs(series_checkpoints(dynamics, pretrained))
        for corpus in dynamics.get("corpora", [])
    ]


def parts(config: dict) -> dict[str, list[tuple[RunId, str]]]:
    """A workflow config's runs of the section by series, each (run, the file its job is asked for): the parts its
    publication is made in, one series after another (:mod:`isoflow.publishing.partial`). A series is a part because
    its runs read its checkpoints, which stay on the machine that trained them (hundreds of MB): a part is saved whole
    or not at all, so that no series is measured on two pretrainings of it."""
    dynamics, pretrained = config.get("dynamics") or {}, pretrained_runs(config.get("pretrain"))
    found: dict[str, list[tuple[RunId, str]]] = {}
    for run in measurements(dynamics, pretrained):
        found.setdefault(run.series, []).append((run, MEASURED))
    for run in comparisons(dynamics, pretrained):
        found.setdefault(run.series, []).append((run, COMPARED))
    return found
