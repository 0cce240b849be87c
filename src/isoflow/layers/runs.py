"""The layers section's runs, each one value (:class:`isoflow.layout.RunId`), and the runs a config asks for: the
rules name their outputs with these, the library writes where they say, the publication reads its folders back with
them.

* :class:`Analysis` — one model (or static table) × corpus, every layer: ``runs/<model>/<corpus>/``;
* :class:`CrossComparison` — two models' layers compared on the same words of a corpus:
  ``runs/cross/<model a>/<model b>/<corpus>/``.

Examples
--------
>>> from isoflow.layers.runs import Analysis, CrossComparison
>>> Analysis("gpt2", "brown").path("results")
'results/layers/runs/gpt2/brown'
>>> CrossComparison.read("cross/gpt2/bert/brown")
CrossComparison(model_a='gpt2', model_b='bert', corpus='brown')
>>> [a.identity() for a in analyses({"models": ["minilm"], "static": ["glove-50d"], "corpora": ["brown"]})]
['minilm/brown', 'glove-50d/brown']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..layout import RunId

CROSS = "cross"  # the folder of the comparisons, beside the models' folders (never a model's name: WILDCARDS)


@dataclass(frozen=True)
class Analysis(RunId):
    """One model × corpus analysis, every layer."""

    SECTION: ClassVar[str] = "layers"
    TEMPLATE: ClassVar[str] = "{model}/{corpus}"
    model: str
    corpus: str


@dataclass(frozen=True)
class CrossComparison(RunId):
    """Two models' layers compared on the same words of a corpus."""

    SECTION: ClassVar[str] = "layers"
    TEMPLATE: ClassVar[str] = CROSS + "/{model_a}/{model_b}/{corpus}"
    model_a: str
    model_b: str
    corpus: str


def analyses(layers: dict) -> list[Analysis]:
    """Every analysis a config's (validated) layers section asks for: each model, then each static table, × corpus."""
    models = layers.get("models", []) + layers.get("static", [])
    return [Analysis(m, c) for m in models for c in layers.get("corpora", [])]


def comparisons(layers: dict) -> list[CrossComparison]:
    """Every comparison a config's layers section asks for: each pair of ``layers.cross`` × corpus."""
    return [CrossComparison(a, b, c) for a, b in layers.get("cross", []) for c in layers.get("corpora", [])]
