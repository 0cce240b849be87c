"""The optimisation runs of the optimize and istar sections, each one value (:class:`isoflow.layout.RunId`): the
rules name their outputs, logs and timings with these, the library writes its records there and reads them back.

* :class:`PlainRun` — the paper's run (λ = 0), the optimize section's: ``runs/<task>/<model>[/<head>]/seed<S>``;
* :class:`IstarRun` — an I-STAR run at λ ≠ 0, the istar section's: ``runs/<task>/<model>[/<head>]/istar<λ>/seed<S>``
  (its λ = 0 rows are the optimize section's runs);
* :class:`PlainSeeds`, :class:`IstarSeeds` — the job that runs every seed of a task × model in one process (a config's
  ``group_seeds``): its log and timings, ``.../seeds``.

``<head>`` is a non-linear head's folder (``mlp1``, ``mlp2``; absent for the paper's linear head: :func:`head_dir`),
λ as Python's ``:g`` writes it. Each run writes ``.parquet`` and ``.json`` beside its stem.

Examples
--------
>>> from isoflow.optimize.runs import IstarRun, PlainRun, optimisation_run
>>> optimisation_run("glue/sst2", "minilm", 3, istar_lambda=-5.0, head="mlp1").path("results")
'results/istar/runs/glue/sst2/minilm/mlp1/istar-5/seed3'
>>> PlainRun.read("polarity/glove-50d/seed0")
PlainRun(task='polarity', model='glove-50d', seed=0, head='')
>>> IstarRun.pattern("results", head="")
'results/istar/runs/{task}/{model}/istar{istar_lambda}/seed{seed}'
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..layout import GROUPED, RunId, runs_dir

SEED = "seed{seed}"  # a run's stem in its folder
PLAIN = "{task}/{model}/{head}"  # the folder of a task × model's plain runs (the head's, for a non-linear one)
ISTAR = PLAIN + "/istar{istar_lambda:g}"  # the folder of its I-STAR runs at one λ


@dataclass(frozen=True)
class PlainRun(RunId):
    """A plain optimisation run (λ = 0): the optimize section's."""

    SECTION: ClassVar[str] = "optimize"
    TEMPLATE: ClassVar[str] = f"{PLAIN}/{SEED}"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("head",)
    task: str
    model: str
    seed: int
    head: str = ""
    istar_lambda: ClassVar[float] = 0.0


@dataclass(frozen=True)
class IstarRun(RunId):
    """An I-STAR optimisation run at λ ≠ 0: the istar section's."""

    SECTION: ClassVar[str] = "istar"
    TEMPLATE: ClassVar[str] = f"{ISTAR}/{SEED}"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("head",)
    task: str
    model: str
    istar_lambda: float
    seed: int
    head: str = ""


@dataclass(frozen=True)
class PlainSeeds(RunId):
    """The job that runs every seed of a task × model's plain runs (its log and timings)."""

    SECTION: ClassVar[str] = "optimize"
    TEMPLATE: ClassVar[str] = f"{PLAIN}/{GROUPED}"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("head",)
    task: str
    model: str
    head: str = ""


@dataclass(frozen=True)
class IstarSeeds(RunId):
    """The job that runs every seed of a task × model's I-STAR runs at one λ (its log and timings)."""

    SECTION: ClassVar[str] = "istar"
    TEMPLATE: ClassVar[str] = f"{ISTAR}/{GROUPED}"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("head",)
    task: str
    model: str
    istar_lambda: float
    head: str = ""


RUN_KINDS = (PlainRun, IstarRun)  # what a records folder of optimisation runs holds


def is_istar(istar_lambda) -> bool:
    """Whether a run with this λ is the istar section's (λ ≠ 0) rather than optimize's."""
    return float(istar_lambda) != 0


def optimisation_run(task: str, model: str, seed: int, *, istar_lambda=0.0, head: str = "") -> PlainRun | IstarRun:
    """The run of ``task`` × ``model`` × ``seed`` at λ: the istar section's for λ ≠ 0, else optimize's."""
    if is_istar(istar_lambda):
        return IstarRun(task, model, float(istar_lambda), int(seed), head)
    return PlainRun(task, model, int(seed), head)


def run_kind(istar_lambda, grouped: bool = False) -> type[RunId]:
    """The run id of a job at λ (a value, or any string for the istar rule's wildcard), one seed or every seed."""
    istar = isinstance(istar_lambda, str) or is_istar(istar_lambda)
    return ((PlainRun, PlainSeeds), (IstarRun, IstarSeeds))[istar][grouped]


def head_dir(head: str, head_layers: int = 1) -> str:
    """Where a run with a non-linear head goes below its model (``mlp1``, ``mlp2``); nothing for the paper's linear
    one. The settings, the workflow's rules and the I-STAR report all name a head by it."""
    return "" if head == "linear" else f"{head}{head_layers}"


def optimize_head(optimize: dict) -> str:
    """The head folder (:func:`head_dir`) of an optimize section's runs, and of its I-STAR sweep's."""
    return head_dir(optimize.get("head", "linear"), optimize.get("head_layers", 1))


def paper_pairs(optimize: dict) -> list[tuple[str, str]]:
    """The optimize section's task × model pairs of the paper's kind (``pairs``)."""
    return [(e["task"], e["model"]) for e in optimize.get("pairs", [])]


def glue_pairs(optimize: dict) -> list[tuple[str, str]]:
    """The optimize section's GLUE pairs: every task of ``glue.tasks`` × every model of ``glue.models``."""
    glue = optimize.get("glue") or {}
    return [(t, m) for t in glue.get("tasks", []) for m in glue.get("models", [])]


def optimize_pairs(optimize: dict) -> list[tuple[str, str]]:
    """The optimize section's task × model pairs: the paper's (``pairs``), then GLUE's (``glue``)."""
    return paper_pairs(optimize) + glue_pairs(optimize)


def optimize_runs(optimize: dict) -> list[PlainRun]:
    """Every run the optimize section of a config asks for, at its head."""
    head = optimize_head(optimize)
    return [PlainRun(t, m, int(s), head) for t, m in optimize_pairs(optimize) for s in optimize["seeds"]]


def istar_pairs(istar: dict) -> list[tuple[str, str]]:
    """The I-STAR sweep's task × model pairs."""
    return [(t, m) for t in istar.get("tasks", []) for m in istar.get("models", [])]


def embedding_pairs(optimize: dict, istar: dict) -> list[tuple[str, str]]:
    """Every (task, model) whose embeddings the optimisation runs read (the optimize section's and the I-STAR
    sweep's), sorted, each once."""
    return sorted(set(optimize_pairs(optimize) + istar_pairs(istar)))


def istar_seeds(istar: dict, optimize: dict) -> list:
    """The I-STAR sweep's seeds: its own (a subset: its λ = 0 rows are optimize's runs), else the config's."""
    return istar.get("seeds") or optimize["seeds"]


def istar_lambdas(istar: dict, task: str) -> list:
    """The sweep's weights for one task: ``task_istar_lambdas[task]`` where given, else ``istar_lambdas``."""
    return (istar.get("task_istar_lambdas") or {}).get(task, istar.get("istar_lambdas", []))


def istar_runs(istar: dict, optimize: dict) -> list[PlainRun | IstarRun]:
    """Every run the istar section of a config asks for: λ = 0 is the plain run (optimize's)."""
    head = optimize_head(optimize)
    return [
        optimisation_run(t, m, s, istar_lambda=float(lam), head=head)
        for t, m in istar_pairs(istar)
        for lam in istar_lambdas(istar, t)
        for s in istar_seeds(istar, optimize)
    ]


def discover(results: str | os.PathLike) -> list[Path]:
    """The JSON records of every complete optimisation run under ``results/optimize/runs`` and
    ``results/istar/runs`` (sorted), at any head."""
    records = {path for kind in RUN_KINDS for _, path in kind.found_in(runs_dir(results, kind.SECTION), ".json")}
    found = []
    for meta in sorted(records):
        try:
            complete = json.loads(meta.read_text(encoding="utf-8")).get("complete")
        except (ValueError, UnicodeDecodeError):
            complete = False  # reported by load_runs if the run is asked for explicitly
        if complete and meta.with_suffix(".parquet").is_file():
            found.append(meta)
    if not found:
        folders = " or ".join(runs_dir(results, kind.SECTION) for kind in RUN_KINDS)
        raise FileNotFoundError(f"no complete optimisation runs under {folders}; run `isoflow optimize` first")
    return found
