"""Where every run lives: the one spelling of the results layout, read by the library (where a run writes its
record) and by the workflow's rules (the outputs a rule declares, the runs a config asks for) alike.

A section writes under ``<results>/<section>/``; its runs under ``runs/``:

========= ===================================================== ============================================
section   a run                                                 its files
========= ===================================================== ============================================
optimize  ``runs/<task>/<model>[/<head>]/seed<S>``              ``.parquet``, ``.json``
istar     ``runs/<task>/<model>[/<head>]/istar<λ>/seed<S>``     the same (λ ≠ 0: a λ = 0 row is optimize's run)
finetune  ``runs/<task>/<model>/<reg><w>/seed<S>``              ``.parquet``, ``.steps.parquet``, ``.json``
finetune  ``runs/<task>/<model>/lr-selection/lr<r>/seed<S>``    a candidate learning rate's run (the same files)
finetune  ``runs/<task>/<model>/lr-selection/chosen.json``      the choice every run of the sweep reads
finetune  ``runs/<task>/bag-of-words.json``                     the task's bag-of-words baseline
finetune  ``runs/<task>/bag-of-words-all-training.json``       the same on every training example
finetune  ``runs/<task>/<model>/gradients.json``                the pulls at the pretrained model
layers    ``runs/<model>/<corpus>/``                            ``LAYER_FILES`` (isoflow.layers; a RunId)
layers    ``runs/cross/<model a>/<model b>/<corpus>/``          ``CROSS_FILES``: two models' layers compared
dynamics  ``runs/<series>/<corpus>/<points>/<revision>/``       ``LAYER_FILES``: one checkpoint's layers (a RunId)
dynamics  ``runs/cka/<series>/<corpus>/<revision>/<later>/``     ``CROSS_FILES``: its layers against a later one's
stability ``runs/``                                             ``runs.parquet``, ``meta.json``
pretrain  ``runs/``                                             the models' records (the report copies them)
========= ===================================================== ============================================

A run's *identity* is its path below ``runs/`` (a :class:`RunId`: typed fields that write the path and read it back;
the older sections' ``*_id`` functions, read back through :func:`runs_in`); the job that made it keeps its timings at
the same path below ``<results>/<section>/benchmarks/`` and its log below ``logs/<section>/``.
``<head>`` is a non-linear head's folder (``mlp1``, ``mlp2``; nothing for the paper's linear one), ``<reg><w>`` a
regulariser and its weight (``istar-1``, ``istar0.0016``, ``cosreg1``): numbers as Python's ``:g`` writes them.
Every function also takes a wildcard for a value (``"{seed}"``, ``"{weight}"``): a string is written as given, so that
a rule declares its outputs with the function that names the run in the library. The ``*_runs`` functions read a
config's (validated, defaults filled) section and say every run it asks for: what the rules' targets list.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import ClassVar

RUNS = "runs"  # a section's runs folder
BENCHMARKS = "benchmarks"  # a section's job timings (Snakemake's benchmark files), one per run
LOGS = "logs"  # the workflow's job logs, one per run
GROUPED = "seeds"  # the stem of one job's log and timings when it runs every seed of a task × model
STABILITY_FILES = ("runs.parquet", "meta.json")
OPTIMISATION_SECTIONS = ("optimize", "istar")  # the sections whose runs are optimisation runs (one schema)

NUMBER = r"-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?"  # a number as :func:`number` writes it
# What each value may look like in a path: the workflow's wildcard constraints (rules/common.smk), so that a path
# reads back as the values that named it.
WILDCARDS = {
    "task": r"[a-z0-9-]+(/[a-z0-9]+)?",  # a task, or a collection's task (glue/sst2)
    "model": r"(?!istar)[a-z0-9-]+",  # never the istar<λ> folder of I-STAR runs
    "seed": r"\d+",
    "step": r"\d+",  # a training step: a checkpoint's (isoflow.checkpoints)
    "istar_lambda": NUMBER,  # I-STAR's λ (the istar section's runs)
    "weight": NUMBER,  # a fine-tuning run's regulariser weight: I-STAR's λ or CosReg's
    "lr": r"[0-9]+(\.[0-9]+)?(e-?[0-9]+)?",
    "reg": r"istar|cosreg|meandir",
    "corpus": r"[a-z0-9-]+",
    "model_a": r"[a-z0-9-]+",  # the two models whose layers are compared (layers.cross)
    "model_b": r"[a-z0-9-]+",
    "pretrained": r"[a-z0-9-]+",
    "series": r"(?!cka/)[a-z0-9.-]+",  # a model whose checkpoints are measured (the dynamics section); never cka/
    "revision": r"[A-Za-z0-9._-]+",  # one of its checkpoints: step1000, OLMo's step1000-tokens4B
    "later": r"[A-Za-z0-9._-]+",  # a later checkpoint of the same series, compared with it (linear CKA)
    "points": r"[a-z-]+",  # what a point is (isoflow.layers.TYPE_MODES: tokens, last-token)
    "head": r"mlp[0-9]+",  # a non-linear head's folder (head_dir)
}


def number(value) -> str:
    """A number as a run folder writes it (Python's ``:g``), or a wildcard (a string) as given."""
    return value if isinstance(value, str) else f"{value:g}"


def _join(*parts) -> str:
    return "/".join(str(p) for p in parts if p != "")


# ----- A run's identity read back: a template's identities under a runs folder ------------------------------------


FIELD = re.compile(r"\{(\w+)(:[^}]*)?\}")  # a template's field, with its format (``{weight:g}``) if it has one


def wildcards_of(template: str) -> str:
    """A template as the workflow's rules spell it: each field a plain wildcard (``{weight:g}`` → ``{weight}``)."""
    return FIELD.sub(r"{\1}", template)


def identity_pattern(template: str) -> re.Pattern:
    """The identities an identity template spells (``finetune_id("{task}", ...)``: the same function that names a
    run, given wildcards), each ``{field}`` held to its :data:`WILDCARDS` constraint and captured by name, as the
    workflow's rules read their wildcards."""
    parts, at = [], 0
    for field in FIELD.finditer(template):
        parts += [re.escape(template[at : field.start()]), f"(?P<{field.group(1)}>{WILDCARDS[field.group(1)]})"]
        at = field.end()
    return re.compile("".join([*parts, re.escape(template[at:])]))


def read_identity(template: str, identity: str) -> dict[str, str] | None:
    """The values that named ``identity`` under ``template`` (strings, as a wildcard reads them), or None."""
    found = identity_pattern(template).fullmatch(identity)
    return None if found is None else found.groupdict()


def runs_in(folder, template: str) -> list[tuple[dict[str, str], Path]]:
    """Every file under ``folder`` (a runs folder) whose path below it is an identity of ``template`` (which ends in
    the file's suffix, e.g. ``FINETUNE_RUN + ".json"``), with the values that named it, sorted by path: how a run
    folder is read, instead of a glob that knows its shape again."""
    folder, pattern = Path(folder), identity_pattern(template)
    found = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        named = pattern.fullmatch(path.relative_to(folder).as_posix()) if path.is_file() else None
        if named:
            found.append((named.groupdict(), path))
    return found


# ----- A run's identity: its path below the section's runs/, benchmarks/ and logs/ folders ------------------------


class RunId:
    """A run's identity as one value: a frozen dataclass (its fields: strings, or ints such as a seed) whose
    ``TEMPLATE`` names the run's folder below ``<results>/<SECTION>/runs/``, each ``{field}`` held to its
    :data:`WILDCARDS` constraint. The one type
    that writes the path (:meth:`identity`, :meth:`path`), reads it back (:meth:`read`, :meth:`of_folder`) and gives
    the workflow's rules their outputs, log and timings with the fields as wildcards (:meth:`pattern`,
    :meth:`log_pattern`, :meth:`benchmark_pattern`).

    >>> @dataclasses.dataclass(frozen=True)
    ... class Measured(RunId):
    ...     SECTION: ClassVar[str] = "dynamics"
    ...     TEMPLATE: ClassVar[str] = "{series}/{corpus}/{revision}"
    ...     series: str
    ...     corpus: str
    ...     revision: str
    >>> Measured("plain-gpt2", "brown", "step400").path("results")
    'results/dynamics/runs/plain-gpt2/brown/step400'
    >>> Measured.read("plain-gpt2/brown/step400"), Measured.read("plain-gpt2/brown")
    (Measured(series='plain-gpt2', corpus='brown', revision='step400'), None)
    >>> Measured.pattern("results")
    'results/dynamics/runs/{series}/{corpus}/{revision}'
    """

    SECTION: ClassVar[str]
    TEMPLATE: ClassVar[str]

    def identity(self) -> str:
        """The run's path below its section's ``runs/``."""
        return self.TEMPLATE.format(**dataclasses.asdict(self))

    def path(self, results) -> str:
        """``<results>/<SECTION>/runs/<identity>``."""
        return run_path(results, self.SECTION, self.identity())

    @classmethod
    def read(cls, identity: str):
        """The run a path below ``runs/`` names, or None; each field as its type (a seed an int)."""
        named = read_identity(cls.TEMPLATE, identity)
        return None if named is None else cls._typed(named)

    @classmethod
    def of_wildcards(cls, wildcards):
        """The run a job's wildcards (anything indexable by field name, strings as a path spells them) name."""
        return cls._typed({f.name: wildcards[f.name] for f in dataclasses.fields(cls)})

    @classmethod
    def _typed(cls, named: dict[str, str]):
        types = typing.get_type_hints(cls)
        return cls(**{key: types[key](value) for key, value in named.items()})

    @classmethod
    def of_folder(cls, folder):
        """The run a folder (``…/runs/<identity>``, any prefix) holds, read from its last parts, or None."""
        depth = cls.TEMPLATE.count("/") + 1
        return cls.read("/".join(Path(folder).parts[-depth:]))

    @classmethod
    def found_in(cls, runs, suffix: str) -> list:
        """Every run of this type under ``runs`` (a section's runs folder) with the file its path and ``suffix`` name
        (``"/meta.json"``: a file in the run's folder; ``".json"``: the run's own file), by path."""
        return [(cls._typed(named), path) for named, path in runs_in(runs, f"{cls.TEMPLATE}{suffix}")]

    @classmethod
    def pattern(cls, results) -> str:
        """The run's folder with its fields as wildcards: a rule's outputs."""
        return run_path(results, cls.SECTION, wildcards_of(cls.TEMPLATE))

    @classmethod
    def log_pattern(cls) -> str:
        return log_path(cls.SECTION, wildcards_of(cls.TEMPLATE))

    @classmethod
    def benchmark_pattern(cls, results) -> str:
        return benchmark_path(results, cls.SECTION, wildcards_of(cls.TEMPLATE))


def runs_dir(results, section: str) -> str:
    """``<results>/<section>/runs``."""
    return f"{results}/{section}/{RUNS}"


def run_path(results, section: str, identity: str) -> str:
    """A run's stem (add its suffixes) or folder: ``<results>/<section>/runs/<identity>``."""
    return f"{runs_dir(results, section)}/{identity}"


def benchmark_path(results, section: str, identity: str) -> str:
    """The timings of the job that made a run: ``<results>/<section>/benchmarks/<identity>.tsv``."""
    return f"{results}/{section}/{BENCHMARKS}/{identity}.tsv"


def log_path(section: str, identity: str) -> str:
    """The log of the job that made a run: ``logs/<section>/<identity>.log``."""
    return f"{LOGS}/{section}/{identity}.log"


def seed_stem(seed) -> str:
    """``seed<S>``; ``seeds`` for ``None``: the job that runs every seed of a task × model (its log, its timings)."""
    return GROUPED if seed is None else f"seed{seed}"


def regulariser_dir(reg: str, weight) -> str:
    """The folder of runs with a regulariser at a weight: its name and the weight (``istar-5``, ``cosreg1``)."""
    return f"{reg}{number(weight)}"


def lambda_dir(istar_lambda) -> str:
    """The folder of runs with I-STAR weight λ: ``istar<λ>``."""
    return regulariser_dir("istar", istar_lambda)


def head_dir(head: str, head_layers: int = 1) -> str:
    """Where a run with a non-linear head goes below its model (``mlp1``, ``mlp2``); nothing for the paper's linear
    one. The settings, the workflow's rules and the I-STAR report all name a head by it."""
    return "" if head == "linear" else f"{head}{head_layers}"


# ----- optimize and istar ---------------------------------------------------------------------------------------


def is_istar(istar_lambda) -> bool:
    """Whether a run with this λ is the istar section's (λ ≠ 0, or a wildcard) rather than optimize's."""
    return isinstance(istar_lambda, str) or float(istar_lambda) != 0


def optimisation_section(istar_lambda) -> str:
    return "istar" if is_istar(istar_lambda) else "optimize"


def optimisation_id(task: str, model: str, seed, *, istar_lambda=0.0, head: str = "") -> str:
    """``<task>/<model>[/<head>][/istar<λ>]/seed<S>`` (``seeds``: every seed's job)."""
    weight = lambda_dir(istar_lambda) if is_istar(istar_lambda) else ""
    return _join(task, model, head, weight, seed_stem(seed))


def optimisation_run(results, task: str, model: str, seed, *, istar_lambda=0.0, head: str = "") -> str:
    """An optimisation run's stem (add ``.parquet`` / ``.json``), in the istar section for λ ≠ 0."""
    identity = optimisation_id(task, model, seed, istar_lambda=istar_lambda, head=head)
    return run_path(results, optimisation_section(istar_lambda), identity)


# The identities of the optimisation sections' runs folders, as templates (runs_in reads them): a run at the paper's
# linear head and one at a non-linear head (one folder deeper); istar's at its λ
OPTIMIZATION_RUNS = {
    "optimize": tuple(optimisation_id("{task}", "{model}", "{seed}", head=h) for h in ("", "{head}")),
    "istar": tuple(
        optimisation_id("{task}", "{model}", "{seed}", istar_lambda="{istar_lambda}", head=h) for h in ("", "{head}")
    ),
}


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


def optimize_runs(optimize: dict, results) -> list[str]:
    """Every run the optimize section of a config asks for (stems), at its head."""
    head = optimize_head(optimize)
    return [
        optimisation_run(results, t, m, s, head=head) for t, m in optimize_pairs(optimize) for s in optimize["seeds"]
    ]


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


def istar_runs(istar: dict, optimize: dict, results) -> list[str]:
    """Every run the istar section of a config asks for (stems): λ = 0 is the plain run (optimize's)."""
    head = optimize_head(optimize)
    return [
        optimisation_run(results, t, m, s, istar_lambda=float(lam), head=head)
        for t, m in istar_pairs(istar)
        for lam in istar_lambdas(istar, t)
        for s in istar_seeds(istar, optimize)
    ]


# ----- stability --------------------------------------------------------------------------------------------------


def stability_runs(results) -> list[str]:
    """The stability section's one job's run files."""
    return [run_path(results, "stability", name) for name in STABILITY_FILES]
