"""Where every run lives: the one spelling of the results layout, read by the library (where a run writes its
record) and by the workflow's rules (the outputs a rule declares, the runs a config asks for) alike.

A section writes under ``<results>/<section>/``, its runs under ``runs/``. A run's *identity* is its path below
``runs/``: a :class:`RunId` (typed fields that write the path and read it back), defined in its section's ``runs``
module, whose docstring lists its kinds of run and their files — :mod:`isoflow.optimize.runs` (optimize and istar),
:mod:`isoflow.finetune.runs`, :mod:`isoflow.layers.runs`, :mod:`isoflow.dynamics.runs`, :mod:`isoflow.pretrain.runs`;
the stability section's one job writes ``runs/`` (:data:`STABILITY_FILES`). The job that made a run keeps its timings
at the same path below ``<results>/<section>/benchmarks/`` and its log below ``logs/<section>/``; numbers in a path
are written as Python's ``:g`` writes them.
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

NUMBER = r"-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?"  # a number as :func:`number` writes it
# What each value may look like in a path: the workflow's wildcard constraints (rules/common.smk), so that a path
# reads back as the values that named it.
WILDCARDS = {
    "task": r"[a-z0-9-]+(/[a-z0-9]+)??",  # a task, or a collection's task (glue/sst2); lazy: a head is no model
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


# ----- A run's identity read back: a template's identities under a runs folder ------------------------------------


FIELD = re.compile(r"\{(\w+)(:[^}]*)?\}")  # a template's field, with its format (``{weight:g}``) if it has one


def identity_pattern(template: str, optional=()) -> re.Pattern:
    """The identities an identity template spells, each ``{field}`` held to its :data:`WILDCARDS` constraint and
    captured by name, as the workflow's rules read their wildcards; a field in ``optional`` may be absent with the
    ``/`` after it (a linear head's runs have no head folder)."""
    parts, at = [], 0
    for field in FIELD.finditer(template):
        name, end = field.group(1), field.end()
        captured = f"(?P<{name}>{WILDCARDS[name]})"
        if name in optional and template[end : end + 1] == "/":
            captured, end = f"(?:{captured}/)?", end + 1
        parts += [re.escape(template[at : field.start()]), captured]
        at = end
    return re.compile("".join([*parts, re.escape(template[at:])]))


def read_identity(template: str, identity: str, optional=()) -> dict[str, str] | None:
    """The values that named ``identity`` under ``template`` (strings, as a wildcard reads them; an absent optional
    field ``""``), or None."""
    found = identity_pattern(template, optional).fullmatch(identity)
    return None if found is None else _values(found)


def _values(found: re.Match) -> dict[str, str]:
    """The values a matched identity holds, an absent optional field as ``""``."""
    return {k: v or "" for k, v in found.groupdict().items()}


def runs_in(folder, template: str, optional=()) -> list[tuple[dict[str, str], Path]]:
    """Every file under ``folder`` (a runs folder) whose path below it is an identity of ``template`` (which ends in
    the file's suffix, e.g. ``"{task}/seed{seed}.json"``), with the values that named it, sorted by path: how a run
    folder is read, instead of a glob that knows its shape again."""
    folder, pattern = Path(folder), identity_pattern(template, optional)
    found = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        named = pattern.fullmatch(path.relative_to(folder).as_posix()) if path.is_file() else None
        if named:
            found.append((_values(named), path))
    return found


def filled(template: str, values: dict, optional=()) -> str:
    """``template`` with the fields in ``values`` written (each in its format) and the others left as wildcards
    (``{seed}``); an optional field given as ``""`` drops with the ``/`` after it."""

    def field(m: re.Match) -> str:
        name = m.group(1)
        return "{" + name + "}" if name not in values else format(values[name], (m.group(2) or ":")[1:])

    for name in optional:
        if values.get(name, None) == "":
            template = template.replace("{" + name + "}/", "")
    return FIELD.sub(field, template)


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
    OPTIONAL: ClassVar[tuple[str, ...]] = ()  # fields that may be "", their folder then absent (a linear head's)

    def identity(self) -> str:
        """The run's path below its section's ``runs/``."""
        return filled(self.TEMPLATE, dataclasses.asdict(self), self.OPTIONAL)

    def path(self, results) -> str:
        """``<results>/<SECTION>/runs/<identity>``."""
        return run_path(results, self.SECTION, self.identity())

    @classmethod
    def read(cls, identity: str):
        """The run a path below ``runs/`` names, or None; each field as its type (a seed an int)."""
        named = read_identity(cls.TEMPLATE, identity, cls.OPTIONAL)
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
        return [(cls._typed(named), path) for named, path in runs_in(runs, f"{cls.TEMPLATE}{suffix}", cls.OPTIONAL)]

    @classmethod
    def wildcard_identity(cls, **values) -> str:
        """The identity with the fields in ``values`` written and the others as wildcards."""
        return filled(cls.TEMPLATE, values, cls.OPTIONAL)

    @classmethod
    def pattern(cls, results, **values) -> str:
        """The run's folder with its fields as wildcards (those in ``values`` written): a rule's outputs."""
        return run_path(results, cls.SECTION, cls.wildcard_identity(**values))

    @classmethod
    def log_pattern(cls, **values) -> str:
        return log_path(cls.SECTION, cls.wildcard_identity(**values))

    @classmethod
    def benchmark_pattern(cls, results, **values) -> str:
        return benchmark_path(results, cls.SECTION, cls.wildcard_identity(**values))


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


# ----- stability --------------------------------------------------------------------------------------------------


def stability_runs(results) -> list[str]:
    """The stability section's one job's run files."""
    return [run_path(results, "stability", name) for name in STABILITY_FILES]
