"""The experiments isoflow carries — the *sections* of its workflow and results — registered once.

Each section has one name, used by its library package or module, its commands, its rule file, its Snakemake target,
its config key, its results folder, its DVC stages and its report category (the glossary: docs/README.md):

========== =================================================================== ==================================
name       what                                                                library
========== =================================================================== ==================================
optimize   an embedding table trained with a linear classifier (Mickus et al.) :mod:`isoflow.optimize`
istar      the same with I-STAR's penalty, swept over λ                        :mod:`isoflow.optimize`
layers     Cai et al.'s measurements across a model's layers                   :mod:`isoflow.layers`
finetune   the encoder itself fine-tuned with I-STAR or CosReg                 :mod:`isoflow.finetune`
stability  IsoScore* on mini-batches of clouds of known isotropy (I-STAR AIM 1) :mod:`isoflow.stability`
pretrain   plain language models of our own, trained from scratch             :mod:`isoflow.pretrain`
========== =================================================================== ==================================

A section writes everything under ``<results_dir>/<name>/``: ``runs/`` (one record per run), ``tables/``,
``figures/`` (and ``aggregate/``, ``benchmarks/``). Its registration says how its runs are made and reported (the
``isoflow`` commands: what its DVC stages depend on), which Snakemake rules make its runs and its report, how a
publication copies its runs, and how its tables and figures are redrawn from published runs. The workflow
(rules/*.smk), ``scripts/publish_results.py``, ``scripts/redraw_published.py``, ``scripts/generate.py`` (which
writes dvc.yaml) and the Makefile's ``reproduce-*`` targets read this registry; adding a section is one entry here
plus its code and rule file."""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .layout import RUNS

Commands = list[list[str]]
CLI_PACKAGE = "isoflow.cli"  # where the built-in commands' modules live


def command_module(command: str, package: str = CLI_PACKAGE) -> str:
    """The module of ``isoflow <command>`` in ``package``: ``<package>.<command with _ for ->``."""
    return f"{package}.{command.replace('-', '_')}"


@dataclass(frozen=True)
class Section:
    name: str
    title: str  # the HTML report's category
    run_commands: tuple[str, ...]  # the `isoflow` commands that make its runs (its DVC runs stage)
    report_commands: tuple[str, ...]  # those that make its tables and figures from the runs
    # The package holding a module per command above, named after it (`toy-report`: <package>.toy_report), each with
    # ``add_parser(subparsers)``. The built-in sections' are the CLI's own (listed in isoflow.cli.COMMANDS, in
    # --help's order); a section of your own keeps its commands in its package (``isoflow.<name>.cli``), and
    # ``isoflow`` offers them from here.
    commands_package: str = CLI_PACKAGE
    # The settings class (dotted path) of its config key when schemas/config.schema.yaml has no entry for it: the key's
    # schema is then the class's fields (type, range, default, description; no other key), as an `x-settings` marker.
    settings: str | None = None
    run_rules: tuple[str, ...] = ()  # the Snakemake rules of its runs (their target: <name>_runs)
    report_rules: tuple[str, ...] = ()  # the Snakemake rules of its report (the target <name> needs them all)
    published_runs: str = "tree"  # "listed": the runs its aggregate's runs.csv lists; "tree": the whole runs/ folder
    # "tree" only: the names of the run files published (none: every file) — a section of many runs publishes compact
    # records, not its samples (the dynamics section: each checkpoint's record and row of measures)
    published_files: tuple[str, ...] = ()
    shares_runs_with: str | None = None  # a section whose runs some of its rows reuse (istar's λ = 0: optimize's)
    # A publication made in parts whose runs read inputs too large to carry between machines (a checkpoint series):
    # the function (dotted path; workflow config -> part -> [(run id, the file its job is asked for)]) that groups its
    # runs into the parts saved whole, each run as its published files; a resume makes only the parts missing and
    # draws the report from every part's published files (isoflow.publishing.partial). None: runs saved whole, each.
    parts: str | None = None
    # The `isoflow` commands that remake a publication's tables and figures from its runs: (folder, scratch) ->
    # commands.
    redraw: Callable[[Path, Path], Commands] | None = field(default=None, compare=False)
    # For its DVC stages ({data}, {results}: a config's data_dir and results_dir): the config keys its runs depend on,
    # the folders they read, the folders its runs and its report write.
    config_keys: tuple[str, ...] = ()
    run_inputs: tuple[str, ...] = ()
    run_outputs: tuple[str, ...] = ("{results}/{name}/runs", "{results}/{name}/benchmarks")
    report_outputs: tuple[str, ...] = ("{results}/{name}/tables", "{results}/{name}/figures")
    # The glossary's row (docs/README.md, written by :func:`glossary_table`): what the experiment is, its library
    # modules, its manual (relative to docs/) and how its config keys read there.
    summary: str = ""
    library: tuple[str, ...] = ()
    manual: str = ""
    config_doc: str = ""

    def paths(self, templates: tuple[str, ...], data: str, results: str) -> list[str]:
        return [t.format(data=data, results=results, name=self.name) for t in templates]

    @property
    def runs_target(self) -> str:
        return f"{self.name}_runs"

    @property
    def commands(self) -> tuple[str, ...]:
        return self.run_commands + self.report_commands

    def command_module(self, command: str) -> str:
        """The module of one of its commands, in its ``commands_package``."""
        return command_module(command, self.commands_package)


def _listed(folder: Path) -> list[str]:
    with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
        return [row["record"] for row in csv.DictReader(fh)]


def _outputs(folder: Path) -> list[str]:
    return ["--tables", str(folder / "tables"), "--figures", str(folder / "figures")]


def _redraw_optimize(folder: Path, tmp: Path) -> Commands:
    return [
        ["optimize-aggregate", "--out", str(tmp), *_listed(folder)],
        ["optimize-report", "--aggregate", str(tmp), *_outputs(folder)],
    ]


def _redraw_istar(folder: Path, tmp: Path) -> Commands:
    """The sweep's aggregate and report; with the publication's config's istar.baseline (another sweep's runs.csv),
    that sweep's aggregate too, for the comparison istar_heads."""
    from .config_files import load

    commands = [["optimize-aggregate", "--out", str(tmp), *_listed(folder)]]
    publication = PUBLICATIONS.get(folder.name)
    config = load(publication.config) if publication else {}
    baseline = (config.get("istar") or {}).get("baseline")
    extra = []
    if baseline:
        commands.append(["optimize-aggregate", "--out", str(tmp / "baseline"), "--manifest", baseline])
        extra = ["--baseline", str(tmp / "baseline")]
    return [*commands, ["istar-report", "--aggregate", str(tmp), *extra, *_outputs(folder)]]


def _redraw_layers(folder: Path, tmp: Path) -> Commands:
    from .layers.runs import Analysis, CrossComparison

    runs = [p.parent for _, p in Analysis.found_in(folder / RUNS, "/meta.json")]
    runs += [p.parent for _, p in CrossComparison.found_in(folder / RUNS, "/cross.json")]  # two models compared
    return [["layers-report", *sorted(map(str, runs)), *_outputs(folder)]]


def _redraw_finetune(folder: Path, tmp: Path) -> Commands:
    from .finetune.runs import REPORTED

    runs = [p for kind in REPORTED for _, p in kind.found_in(folder / RUNS, ".json")]
    return [["finetune-report", *sorted(str(p) for p in runs), *_outputs(folder)]]


def _redraw_stability(folder: Path, tmp: Path) -> Commands:
    """From its committed estimates (recomputing them, seeded, agrees only to rounding: BLAS and threads differ)."""
    return [["stability", "--from-runs", "--runs", str(folder / RUNS), *_outputs(folder)]]


def _redraw_dynamics(folder: Path, tmp: Path) -> Commands:
    from .dynamics.runs import Comparison, Measurement

    runs = [p.parent for _, p in Measurement.found_in(folder / RUNS, "/meta.json")]
    runs += [p.parent for _, p in Comparison.found_in(folder / RUNS, "/cross.json")]
    return [["dynamics-report", *sorted(map(str, runs)), *_outputs(folder)]]


def _redraw_pretrain(folder: Path, tmp: Path) -> Commands:
    from .pretrain.runs import PretrainedRecords

    records = PretrainedRecords.found_in(folder / RUNS, "/pretrain.json")
    return [["pretrain-report", *sorted(str(p.parent) for _, p in records), *_outputs(folder)]]


EMBEDDED = ("{data}/tasks", "{data}/embeddings")
SECTIONS: dict[str, Section] = {
    s.name: s
    for s in (
        Section(
            "optimize",
            "Optimisation (Mickus et al. 2024)",
            ("optimize",),
            ("optimize-aggregate", "optimize-report"),
            run_rules=("optimize_run",),
            report_rules=("optimize_aggregate", "optimize_report"),
            published_runs="listed",
            redraw=_redraw_optimize,
            config_keys=("optimize",),
            run_inputs=EMBEDDED,
            report_outputs=("{results}/{name}/aggregate", "{results}/{name}/tables", "{results}/{name}/figures"),
            summary=(
                "Mickus et al. (2024): an embedding table trained with a linear "
                "classifier; IsoScore and the silhouette after every update"
            ),
            library=("isoflow.optimize",),
            manual="optimize.md",
            config_doc="`optimize`: `pairs` (its Table 1), `glue` (its Appendix A), `seeds`, `steps`",
        ),
        Section(
            "istar",
            "I-STAR in the optimisation (Rudman & Eickhoff 2024)",
            ("optimize",),
            ("optimize-aggregate", "istar-report"),
            run_rules=("istar_run",),
            report_rules=("istar_aggregate", "istar_baseline_aggregate", "istar_report"),
            published_runs="listed",
            shares_runs_with="optimize",
            redraw=_redraw_istar,
            config_keys=("optimize", "istar"),
            run_inputs=EMBEDDED,
            report_outputs=("{results}/{name}/aggregate", "{results}/{name}/tables", "{results}/{name}/figures"),
            summary="the same with I-STAR's penalty λ·(1 − IsoScore\\*), swept over λ",
            library=("isoflow.optimize", "isoflow.istar"),
            manual="optimize.md#i-star-in-the-experiment-isotropy-as-an-objective",
            config_doc="`istar`",
        ),
        Section(
            "layers",
            "Clusters and manifolds across layers (Cai et al. 2021)",
            ("layers", "layers-cross"),
            ("layers-report",),
            run_rules=("layers_run", "layers_cross"),
            report_rules=("layers_report",),
            redraw=_redraw_layers,
            config_keys=("layers",),
            run_inputs=("{data}/pretrained",),
            summary=(
                "Cai et al. (2021): S_inter, S_intra, clusters, cluster-centred isotropy, LID and TwoNN in every "
                "layer; CKA within a model and between two"
            ),
            library=("isoflow.layers",),
            manual="layers.md",
            config_doc="`layers`",
        ),
        Section(
            "finetune",
            "Fine-tuning the encoder with I-STAR and CosReg",
            ("finetune", "finetune-diagnosis", "finetune-seed-floor", "finetune-same-as"),
            ("finetune-report",),
            run_rules=(
                "finetune_run",
                "finetune_baseline",
                "finetune_baseline_all_training",
                "finetune_lr_run",
                "finetune_lr_choice",
                "finetune_gradients",
                "finetune_seed_floor",
                "finetune_same_as",
            ),
            report_rules=("finetune_report",),
            redraw=_redraw_finetune,
            config_keys=("finetune",),
            run_inputs=("{data}/tasks", "{data}/pretrained"),
            summary=(
                "the encoder itself fine-tuned with I-STAR or CosReg (Rudman & "
                "Eickhoff 2024), measured on held-out data"
            ),
            library=("isoflow.finetune",),
            manual="finetune.md",
            config_doc="`finetune`",
        ),
        Section(
            "stability",
            "IsoScore* on mini-batches (I-STAR's AIM 1)",
            (),
            ("stability",),
            report_rules=("stability_run",),
            redraw=_redraw_stability,
            config_keys=("stability",),
            run_outputs=(),
            report_outputs=("{results}/{name}/runs", "{results}/{name}/tables", "{results}/{name}/figures"),
            summary="IsoScore\\* on mini-batches of clouds of known isotropy (I-STAR's AIM 1)",
            library=("isoflow.stability",),
            manual="finetune.md#isoscore-on-mini-batches-i-stars-aim-1",
            config_doc="`stability`",
        ),
        Section(
            "pretrain",
            "Plain language models of our own",
            ("pretrain-corpus", "pretrain"),
            ("pretrain-report",),
            run_rules=("pretrain_corpus", "pretrain_model"),
            report_rules=("pretrain_report",),
            redraw=_redraw_pretrain,
            config_keys=("pretrain",),
            run_outputs=("{data}/pretrain", "{data}/pretrained", "{results}/{name}/benchmarks"),
            report_outputs=("{results}/{name}/runs", "{results}/{name}/tables", "{results}/{name}/figures"),
            summary=(
                "plain masked and causal language models of our own, trained from scratch on text that is no task's"
            ),
            library=("isoflow.pretrain",),
            manual="pretrain.md",
            config_doc="`pretrain`",
        ),
        Section(
            "dynamics",
            "Geometry across training",
            ("layers", "layers-cross"),
            ("dynamics-report",),
            commands_package="isoflow.dynamics.cli",
            settings="isoflow.dynamics.settings.DynamicsSettings",
            run_rules=("dynamics_run", "dynamics_cka"),
            report_rules=("dynamics_report",),
            published_files=("meta.json", "layers.csv", "cross.json", "cross.parquet"),
            parts="isoflow.dynamics.runs.parts",
            redraw=_redraw_dynamics,
            config_keys=("dynamics",),
            run_inputs=("{data}/pretrained",),
            summary="every checkpoint of a model's series measured layer by layer, on the same tokens at each",
            library=("isoflow.dynamics",),
            manual="pretrain.md#geometry-across-training-the-dynamics-section",
            config_doc="`dynamics`",
        ),
    )
}


@dataclass(frozen=True)
class Publication:
    """A folder of docs/results: a section's results under one config, made by ``make reproduce-<name>``."""

    name: str
    section: str
    config: str
    notes: tuple[str, ...] = field(default=())
    # A sweep whose runs are compared with one another: published only when every run was made at one clean commit
    # with one thread count (training amplifies any difference of code or summation order).
    one_commit: bool = False
    # Its runs compared seed by seed only (each run against the λ = 0 run of its seed): each seed's runs on one kind of
    # CPU, the kind free to differ between seeds (docs/finetune.md, "The strength-matched control"); else every run's.
    cpu_per_seed: bool = False


PUBLICATIONS: dict[str, Publication] = {
    p.name: p
    for p in (
        Publication("optimize", "optimize", "config/reproduce-offline.yaml"),
        Publication("supersense-ablation", "optimize", "config/supersense-ablation.yaml"),
        Publication("istar", "istar", "config/reproduce-offline.yaml"),
        Publication("layers", "layers", "config/reproduce-offline.yaml"),
        Publication("finetune", "finetune", "config/reproduce-offline.yaml"),
        Publication("finetune-longer", "finetune", "config/finetune-longer.yaml"),
        Publication("finetune-plain", "finetune", "config/finetune-plain.yaml"),
        Publication("finetune-smollm2", "finetune", "config/finetune-smollm2.yaml"),
        Publication("finetune-smollm2-fair", "finetune", "config/finetune-smollm2-fair.yaml", one_commit=True),
        Publication(
            "finetune-smollm2-fair-floor", "finetune", "config/finetune-smollm2-fair-floor.yaml", one_commit=True
        ),
        Publication(
            "finetune-smollm2-fair-rerun", "finetune", "config/finetune-smollm2-fair-rerun.yaml", one_commit=True
        ),
        Publication(
            "finetune-smollm2-fair-control",
            "finetune",
            "config/finetune-smollm2-fair-control.yaml",
            one_commit=True,
            cpu_per_seed=True,
        ),
        Publication("nonlinear-head", "istar", "config/nonlinear-head.yaml"),
        Publication("nonlinear-head-2", "istar", "config/nonlinear-head-2.yaml"),
        Publication("stability", "stability", "config/reproduce-offline.yaml"),
        Publication("pretrain", "pretrain", "config/reproduce-offline.yaml"),
        Publication("training-dynamics", "dynamics", "config/training-dynamics.yaml"),
    )
}


# Folders of docs/results made outside the registry's publications (by a command of their own), listed in their
# section's glossary row: section -> names.
OTHER_RESULTS = {"finetune": ("finetune-diagnosis", "istar-points")}


def glossary_table(root: Path | str = ".") -> str:
    """docs/README.md's glossary table, one row per section, from the registry: its library, commands, rule file and
    targets, config keys, manual and published results (those with a README under ``root``/docs/results, and sweeps
    saved in parts under ``root``/partial-results)."""
    code = lambda names: ", ".join(f"`{n}`" for n in names)  # noqa: E731
    lines = [
        "| name | the experiment | library | commands | rule file, targets | config key | manual | published results |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in SECTIONS.values():
        names = [p.name for p in PUBLICATIONS.values() if p.section == s.name] + list(OTHER_RESULTS.get(s.name, ()))
        published = [
            f"[{n}](results/{n}/README.md)" for n in names if (Path(root) / "docs/results" / n / "README.md").is_file()
        ] + [  # a sweep saved in parts, not yet published whole
            f"{n}: partly run, [partial-results](../partial-results/{n})"
            for n in names
            if not (Path(root) / "docs/results" / n).is_dir() and (Path(root) / "partial-results" / n).is_dir()
        ]
        targets = [s.name] + ([s.runs_target] if s.run_rules else [])
        manual = f"[{s.manual.split('#')[0]}]({s.manual})"
        lines.append(
            f"| `{s.name}` | {s.summary} | {code(s.library)} | {code(s.commands)} | "
            f"`rules/{s.name}.smk`: {code(targets)} | {s.config_doc} | {manual} | {', '.join(published) or '–'} |"
        )
    return "\n".join(lines) + "\n"


def section_packages() -> list[str]:
    """The top-level modules of ``isoflow`` that hold the sections' code (each section's first library module; the
    istar section's is optimize's), in the registry's order, each once: the import contract's sections tier, whose
    modules import none of each other (pyproject.toml, written by scripts/generate.py)."""
    found = [s.library[0].split(".")[1] for s in SECTIONS.values() if s.library]
    return list(dict.fromkeys(found))


def own_command_modules() -> list[str]:
    """The command modules of sections that keep their commands in their own package (not the CLI's), in the
    registry's order."""
    owned, found = set(), []
    for s in SECTIONS.values():  # a command is its first section's (dynamics runs the layers section's `layers`)
        found += [s.command_module(c) for c in s.commands if c not in owned and s.commands_package != CLI_PACKAGE]
        owned.update(s.commands)
    return found


def settings_classes() -> dict[str, str]:
    """Config key -> the settings class that is its schema, for the sections that declare one."""
    return {s.name: s.settings for s in SECTIONS.values() if s.settings}


def section(name: str) -> Section:
    if name not in SECTIONS:
        raise ValueError(f"unknown section {name!r}; known: {', '.join(SECTIONS)}")
    return SECTIONS[name]


def results_dir(results: str, name: str) -> str:
    """A section's results folder: ``<results>/<name>``."""
    return f"{results}/{section(name).name}"
