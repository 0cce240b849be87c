"""The finetune section's runs, each one value (:class:`isoflow.layout.RunId`): the rules name their outputs with
these, the library writes its records there and the report and the publication read the folders back with them.

* :class:`SweepRun` — one regulariser at one weight, one seed: ``runs/<task>/<model>/<reg><w>/seed<S>`` (``.json``,
  ``.parquet``, ``.steps.parquet``; I-STAR's λ = 0 is the plain run, ``istar0``);
* :class:`LrRun` — a candidate learning rate's plain run: ``runs/<task>/<model>/lr-selection/lr<r>/seed<S>``;
* :class:`LrChoice` — the choice every run of the sweep reads: ``runs/<task>/<model>/lr-selection/chosen.json``;
* :class:`Baseline`, :class:`BaselineAllTraining` — a task's bag-of-words baseline on the runs' training examples,
  and on every training example: ``runs/<task>/bag-of-words.json``, ``runs/<task>/bag-of-words-all-training.json``;
* :class:`Gradients` — the pulls at the pretrained model: ``runs/<task>/<model>/gradients.json``;
* :class:`SeedFloor` — one weight's CKA between its seeds: ``runs/<task>/<model>/<reg><w>/cka-between-seeds.json``;
* :class:`SameAs` — a run compared with its namesake elsewhere: ``runs/<task>/<model>/<reg><w>/same-as-seed<S>.json``.

Weights and learning rates are written as Python's ``:g`` writes them (``istar-1``, ``istar0.0016``, ``lr3e-05``).

Examples
--------
>>> from isoflow.finetune.runs import LrRun, SweepRun
>>> SweepRun("glue/sst2", "smollm2-135m", "istar", -1.0, 3).path("results")
'results/finetune/runs/glue/sst2/smollm2-135m/istar-1/seed3'
>>> SweepRun.read("glue/sst2/smollm2-135m/meandir1/seed0")
SweepRun(task='glue/sst2', model='smollm2-135m', reg='meandir', weight=1.0, seed=0)
>>> SweepRun.pattern("results")
'results/finetune/runs/{task}/{model}/{reg}{weight}/seed{seed}'
>>> LrRun("polarity", "minilm", 3e-05, 0).identity()
'polarity/minilm/lr-selection/lr3e-05/seed0'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..layout import RunId, runs_in

SECTION = "finetune"
BASELINE = "bag-of-words"  # a fine-tuning task's bag-of-words baseline, on the runs' training examples
BASELINE_ALL = "bag-of-words-all-training"  # the same on every training example (the runs train on a subset)
GRADIENTS = "gradients"  # a task × model's pulls at its pretrained model (isoflow.finetune.diagnosis)
LR_SELECTION = "lr-selection"  # a task × model's candidate learning rates and the choice
LR_CHOICE = "chosen"
SAME_AS = "same-as"  # a fine-tuning run compared with its namesake elsewhere: <dir>/same-as-seed<S>.json
SEED_FLOOR = "cka-between-seeds"  # one weight's CKA between its seeds' fine-tuned models (isoflow.finetune.seed_floor)
STATES = "states"  # beside runs/: fine-tuning runs' token states for the seed floor (tens of MB a run; not published)
BASELINE_FILE, BASELINE_ALL_FILE, GRADIENTS_FILE, SEED_FLOOR_FILE = (
    f"{stem}.json" for stem in (BASELINE, BASELINE_ALL, GRADIENTS, SEED_FLOOR)
)
BASELINE_FILES = (BASELINE_FILE, BASELINE_ALL_FILE)
ARM = "{task}/{model}/{reg}{weight:g}"  # one regulariser at one weight: the folder of its seeds' runs
SEED = "seed{seed}"  # a run's stem in its arm's folder


def arm_records(folder) -> list[Path]:
    """The records of an arm's runs (``<folder>/seed<S>.json``), by seed: how a report reads another sweep's arm."""
    found = runs_in(folder, f"{SEED}.json")
    return [path for _, path in sorted(found, key=lambda item: int(item[0]["seed"]))]


def _states_file(results, identity: str) -> str:
    return f"{results}/{SECTION}/{STATES}/{identity}.pt"


def in_arm(folder, seed, suffix: str) -> str:
    """A file of the run of ``seed`` in an arm's folder (``<folder>/seed<S><suffix>``): how a run reads the runs of
    another sweep's arm (``finetune.matched_pull_from``)."""
    return os.path.join(folder, SEED.format(seed=seed) + suffix)


@dataclass(frozen=True)
class SweepRun(RunId):
    """One run of the sweep: a regulariser (``istar``, ``cosreg``, ``meandir``) at a weight, one seed."""

    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{ARM}/{SEED}"
    task: str
    model: str
    reg: str
    weight: float
    seed: int

    def states(self, results) -> str:
        """Where the workflow has the run write its token states (``states_points``): ``<results>/finetune/states/
        <identity>.pt``, outside ``runs/`` (neither published nor saved with a sweep's parts: the seed floor made from
        them is)."""
        return _states_file(results, self.identity())

    @classmethod
    def states_pattern(cls, results) -> str:
        """:meth:`states` with the fields as wildcards: a rule's output."""
        return _states_file(results, cls.wildcard_identity())

    def same_as(self) -> SameAs:
        return SameAs(self.task, self.model, self.reg, self.weight, self.seed)

    def seed_floor(self) -> SeedFloor:
        return SeedFloor(self.task, self.model, self.reg, self.weight)


@dataclass(frozen=True)
class SameAs(RunId):
    """A sweep run compared with its namesake in another runs folder (isoflow.finetune.same_as)."""

    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{ARM}/{SAME_AS}-{SEED}"
    task: str
    model: str
    reg: str
    weight: float
    seed: int


@dataclass(frozen=True)
class SeedFloor(RunId):
    """One weight's CKA between its seeds' fine-tuned models (isoflow.finetune.seed_floor)."""

    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{ARM}/{SEED_FLOOR}"
    task: str
    model: str
    reg: str
    weight: float

    def runs(self, seeds) -> list[SweepRun]:
        """The runs it compares: its weight's, one per seed."""
        return [SweepRun(self.task, self.model, self.reg, self.weight, int(s)) for s in seeds]


@dataclass(frozen=True)
class LrRun(RunId):
    """A candidate learning rate's plain run (λ = 0), chosen between before the sweep."""

    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{{task}}/{{model}}/{LR_SELECTION}/lr{{lr:g}}/seed{{seed}}"
    task: str
    model: str
    lr: float
    seed: int


@dataclass(frozen=True)
class LrChoice(RunId):
    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{{task}}/{{model}}/{LR_SELECTION}/{LR_CHOICE}"
    task: str
    model: str


@dataclass(frozen=True)
class Baseline(RunId):
    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{{task}}/{BASELINE}"
    task: str


@dataclass(frozen=True)
class BaselineAllTraining(RunId):
    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{{task}}/{BASELINE_ALL}"
    task: str


@dataclass(frozen=True)
class Gradients(RunId):
    SECTION: ClassVar[str] = SECTION
    TEMPLATE: ClassVar[str] = f"{{task}}/{{model}}/{GRADIENTS}"
    task: str
    model: str


# What the report reads (as the workflow's report rule: the sweep's runs, not the learning-rate candidates chosen
# between before it), each a record ``<identity>.json``
REPORTED = (SweepRun, Baseline, BaselineAllTraining, Gradients, SeedFloor, SameAs)


def pairs(finetune: dict) -> list[tuple[str, str]]:
    """A config's finetune section's task × model pairs."""
    return [(t, m) for t in finetune.get("tasks", []) for m in finetune.get("models", [])]


def sweep_runs(finetune: dict) -> list[SweepRun]:
    """Every sweep run a config's finetune section asks for: I-STAR at each λ (0: the plain run), CosReg and the
    mean-direction control at each non-zero weight, every seed."""
    regs = [("istar", float(lam)) for lam in finetune.get("istar_lambdas", [])]
    regs += [("cosreg", float(w)) for w in finetune.get("cosreg_weights", []) if float(w) != 0]
    regs += [("meandir", float(w)) for w in finetune.get("meandir_weights", []) if float(w) != 0]
    return [SweepRun(t, m, reg, w, s) for t, m in pairs(finetune) for reg, w in regs for s in finetune.get("seeds", [])]


def compared_with(finetune: dict, folder) -> list[SameAs]:
    """Each sweep run compared with its namesake in ``folder`` (another sweep's runs folder, the config's
    ``same_as``): every run of an arm that folder holds. A run of an arm it lacks (a control's loss, absent from the
    sweep it controls) is compared with nothing; a missing seed of an arm it holds stays an input the workflow lacks."""
    return [run.same_as() for run in sweep_runs(finetune) if (Path(folder) / run.identity()).parent.is_dir()]


def seed_floors(finetune: dict) -> list[SeedFloor]:
    """Each weight's CKA between its seeds, once per task, model and weight, by identity."""
    return sorted({run.seed_floor() for run in sweep_runs(finetune)}, key=SeedFloor.identity)


def lr_runs(finetune: dict, task: str, model: str) -> list[LrRun]:
    """A task × model's candidate runs: λ = 0, the first seed, one per candidate learning rate."""
    return [LrRun(task, model, float(lr), finetune["seeds"][0]) for lr in finetune.get("lr_candidates") or []]
