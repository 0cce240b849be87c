"""A run's identity in one place (isoflow.layout): the library names a run's files with it, the workflow's rules declare
their outputs and list a config's runs with it, and a path it spells reads back as the values that named it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from snakemake.io import glob_wildcards

from isoflow import layout
from isoflow.finetune.run import finetune_path
from isoflow.finetune.runs import Baseline, LrRun, SameAs, SweepRun, compared_with, lr_runs, sweep_runs
from isoflow.layers.run import layers_dir
from isoflow.layers.runs import Analysis, CrossComparison
from isoflow.optimize import runs as optimize_runs
from isoflow.optimize import trajectory_path
from isoflow.optimize.runs import IstarRun, PlainRun, optimisation_run

ROOT = Path(__file__).resolve().parents[1]


def constrained(pattern: str) -> str:
    """A pattern with the workflow's constraint on each wildcard (rules/common.smk reads them from layout.WILDCARDS)."""
    return re.sub(r"\{(\w+)\}", lambda m: f"{{{m.group(1)},{layout.WILDCARDS[m.group(1)]}}}", pattern)


def read_back(pattern: str, path: str) -> dict:
    found = glob_wildcards(constrained(pattern), files=[path])
    return {name: values[0] for name, values in found._asdict().items() if values}


@pytest.mark.parametrize(
    "lam, head", [(0.0, ""), (-5.0, ""), (0.5, "mlp1"), (1e-3, "mlp2")], ids=["plain", "istar", "head", "small"]
)
def test_an_optimisation_run_reads_back_as_the_values_that_named_it(lam, head):
    run = optimisation_run("glue/sst2", "glove-6b-300", 3, istar_lambda=lam, head=head)
    path, pattern = run.path("res"), optimize_runs.run_kind(lam).pattern("res", head=head)
    values = read_back(pattern, path)
    assert type(run).read(run.identity()) == run and run.head == head
    assert values["task"] == "glue/sst2" and values["model"] == "glove-6b-300" and values["seed"] == "3"
    if lam:
        assert float(values["istar_lambda"]) == lam and "/istar/runs/" in path
    else:
        assert "istar_lambda" not in values and "/optimize/runs/" in path


@pytest.mark.parametrize("reg, weight", [("istar", -1.0), ("istar", 0.0016), ("istar", 0.0), ("cosreg", 1.0)])
def test_a_finetuning_run_reads_back_as_the_values_that_named_it(reg, weight):
    run = SweepRun("polarity", "smollm2-135m", reg, weight, 12)
    path, pattern = run.path("res"), SweepRun.pattern("res")
    assert read_back(pattern + ".json", path + ".json") == {
        "task": "polarity",
        "model": "smollm2-135m",
        "seed": "12",
        "reg": reg,
        "weight": f"{weight:g}",
    }
    assert SweepRun.of_wildcards(read_back(pattern + ".json", path + ".json")) == run
    assert SweepRun.read(run.identity()) == run and isinstance(SweepRun.read(run.identity()).seed, int)


def test_a_model_named_like_a_weight_folder_is_not_read_as_a_model():
    """An I-STAR run's λ folder must never be taken for a model (the optimize rule would claim the istar run)."""
    istar_run = IstarRun("polarity", "minilm", -1.0, 0).path("res")
    plain = PlainRun.pattern("res", head="").replace("/optimize/", "/istar/")
    assert read_back(plain + ".parquet", istar_run + ".parquet") == {}
    assert PlainRun.read("polarity/minilm/mlp1/seed0") == PlainRun("polarity", "minilm", 0, "mlp1")  # a head folder
    assert PlainRun.read("glue/sst2/minilm/mlp1/seed0") == PlainRun("glue/sst2", "minilm", 0, "mlp1")
    assert PlainRun.read("glue/sst2/minilm/seed0") == PlainRun("glue/sst2", "minilm", 0)


def test_the_library_names_a_run_as_the_layout_does(tmp_path):
    assert trajectory_path("glue/sst2", "minilm", 2, tmp_path, -1.0, "mlp1") == Path(
        IstarRun("glue/sst2", "minilm", -1.0, 2, "mlp1").path(tmp_path)
    )
    assert trajectory_path("glue/sst2", "minilm", 2, tmp_path) == tmp_path / "optimize/runs/glue/sst2/minilm/seed2"
    assert finetune_path("polarity", "minilm", 1, tmp_path, reg="cosreg", weight=2.0) == Path(
        SweepRun("polarity", "minilm", "cosreg", 2.0, 1).path(tmp_path)
    )
    assert finetune_path("polarity", "minilm", 1, tmp_path) == tmp_path / "finetune/runs/polarity/minilm/istar0/seed1"
    plain = tmp_path / "finetune/runs/polarity/minilm/istar-1/seed1"
    assert finetune_path("polarity", "minilm", 1, tmp_path, weight=-1.0) == plain
    candidate = finetune_path("polarity", "minilm", 1, results=tmp_path, lr_candidate=2e-5)
    assert candidate == tmp_path / "finetune/runs/polarity/minilm/lr-selection/lr2e-05/seed1"
    assert candidate == Path(LrRun("polarity", "minilm", 2e-5, 1).path(tmp_path))
    assert layers_dir("gpt2", "brown", tmp_path) == tmp_path / "layers/runs/gpt2/brown"


def test_a_config_s_runs_are_every_combination_it_names():
    finetune = {
        "tasks": ["polarity"],
        "models": ["a", "b"],
        "istar_lambdas": [0, -1],
        "cosreg_weights": [0, 1],
        "seeds": [0, 1],
        "lr_candidates": [1e-5, 3e-5],
    }
    runs = [run.path("r") for run in sweep_runs(finetune)]
    assert len(runs) == 2 * (2 + 1) * 2 and len(set(runs)) == len(runs)  # CosReg at 0 is the plain run: not twice
    assert "r/finetune/runs/polarity/b/cosreg1/seed1" in runs and "r/finetune/runs/polarity/a/istar0/seed0" in runs
    assert not any("cosreg0" in r for r in runs)
    assert [run.path("r") for run in lr_runs(finetune, "polarity", "a")] == [
        "r/finetune/runs/polarity/a/lr-selection/lr1e-05/seed0",
        "r/finetune/runs/polarity/a/lr-selection/lr3e-05/seed0",
    ]
    optimize = {"pairs": [{"task": "polarity", "model": "glove"}], "glue": {"tasks": [], "models": []}, "seeds": [4]}
    istar = {"tasks": ["polarity"], "models": ["glove"], "istar_lambdas": [0, 1], "seeds": None}
    assert [run.path("r") for run in optimize_runs.istar_runs(istar, optimize)] == [
        "r/optimize/runs/polarity/glove/seed4",  # λ = 0: the optimize section's run, not a second one
        "r/istar/runs/polarity/glove/istar1/seed4",
    ]
    assert [run.path("r") for run in optimize_runs.optimize_runs({**optimize, "head": "mlp", "head_layers": 2})] == [
        "r/optimize/runs/polarity/glove/mlp2/seed4"
    ]
    both = {**optimize, "glue": {"tasks": ["glue/rte", "glue/wnli"], "models": ["minilm"]}}
    pairs = optimize_runs.optimize_pairs(both)
    assert pairs == [("polarity", "glove"), ("glue/rte", "minilm"), ("glue/wnli", "minilm")]
    assert pairs == optimize_runs.paper_pairs(both) + optimize_runs.glue_pairs(both)
    assert optimize_runs.istar_pairs({**istar, "models": ["a", "b"]}) == [("polarity", "a"), ("polarity", "b")]
    head = optimize_runs.optimize_head
    assert (head(optimize), head({**optimize, "head": "mlp", "head_layers": 1})) == (
        "",
        "mlp1",
    )


def test_the_rules_spell_no_run_folder_of_their_own():
    """Every run path the rules declare comes from isoflow.layout: no rule file writes a runs/ folder itself."""
    spelled = []
    own_spelling = re.compile(
        r"""["'/{]runs["'/]|/benchmarks/|logs/(optimize|istar|finetune|layers|pretrain)/\{|lr-selection|bag-of-words\.|seed\{"""
    )
    for smk in sorted((ROOT / "rules").rglob("*.smk")):
        for number, line in enumerate(smk.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if own_spelling.search(code):
                spelled.append(f"{smk.relative_to(ROOT)}:{number}: {line.strip()}")
    assert spelled == []


@pytest.mark.parametrize("reg, weight", [("istar", -1.0), ("istar", 0.0016), ("cosreg", 1.0), ("meandir", 1.0)])
def test_an_identity_reads_back_through_the_library_as_through_the_rules(reg, weight):
    """layout.read_identity reads a run's identity with the template the rules declare it with, as Snakemake's
    wildcards do (glob_wildcards, the constraints of layout.WILDCARDS)."""
    identity = SweepRun("glue/sst2", "smollm2-135m", reg, weight, 3).identity()
    template = SweepRun.wildcard_identity()
    values = layout.read_identity(SweepRun.TEMPLATE, identity)
    assert values == read_back(template, identity)
    assert (values["task"], values["model"], values["reg"], float(values["weight"]), values["seed"]) == (
        "glue/sst2",
        "smollm2-135m",
        reg,
        weight,
        "3",
    )
    assert SweepRun.read(LrRun("glue/sst2", "m", 3e-5, 0).identity()) is None


def test_runs_are_compared_with_their_namesakes_where_the_other_folder_holds_their_arm(tmp_path):
    """A sweep's same_as: every run of an arm the other runs folder holds, a missing seed included (the workflow then
    lacks an input and says so); a control's arm, which the sweep it controls never ran, is compared with nothing."""
    finetune = {"tasks": ["glue/sst2"], "models": ["m"], "istar_lambdas": [0, 1], "meandir_weights": [1]}
    finetune["seeds"] = [0, 1]
    for arm in ("istar0", "istar1"):
        (tmp_path / "glue/sst2/m" / arm).mkdir(parents=True)
    (tmp_path / "glue/sst2/m/istar0/seed0.json").write_text("{}")
    expected = [SameAs("glue/sst2", "m", "istar", lam, seed) for lam in (0.0, 1.0) for seed in (0, 1)]
    assert compared_with(finetune, tmp_path) == expected
    (tmp_path / "glue/sst2/m/istar1").rmdir()
    assert compared_with(finetune, tmp_path) == expected[:2]


def test_a_runs_folder_is_read_by_its_templates(tmp_path):
    """runs_in finds the files whose path below the folder is a template's identity (its suffix included), with the
    values that named them, and nothing else: a learning-rate candidate is not a sweep's run, a layer analysis' files
    below its folder are not its record."""
    files = [
        SweepRun("glue/sst2", "minilm", "istar", -1.0, 0).identity() + ".json",
        SweepRun("polarity", "minilm", "meandir", 1.0, 1).identity() + ".json",
        SweepRun("polarity", "minilm", "meandir", 1.0, 1).identity() + ".parquet",
        LrRun("polarity", "minilm", 1e-5, 0).identity() + ".json",
        Baseline("polarity").identity() + ".json",
        Analysis("gpt2", "brown").identity() + "/meta.json",
        Analysis("gpt2", "brown").identity() + "/layers/meta.json",
        CrossComparison("gpt2", "bert", "brown").identity() + "/cross.json",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    runs = SweepRun.found_in(tmp_path, ".json")
    assert [(v.task, v.reg, v.seed) for v, _ in runs] == [("glue/sst2", "istar", 0), ("polarity", "meandir", 1)]
    assert [p.relative_to(tmp_path).as_posix() for _, p in runs] == [files[0], files[1]]
    assert [v for v, _ in LrRun.found_in(tmp_path, ".json")] == [LrRun("polarity", "minilm", 1e-5, 0)]
    assert [v for v, _ in Baseline.found_in(tmp_path, ".json")] == [Baseline("polarity")]
    assert [v for v, _ in Analysis.found_in(tmp_path, "/meta.json")] == [Analysis("gpt2", "brown")]
    compared = CrossComparison("gpt2", "bert", "brown")
    assert [v for v, _ in CrossComparison.found_in(tmp_path, "/cross.json")] == [compared]
    assert SweepRun.found_in(tmp_path / "absent", ".json") == []


def test_the_optimisation_runs_are_read_by_their_templates(tmp_path):
    """optimize.runs.discover finds the records of the optimize and istar sections' runs, at the linear head and a
    non-linear one, through their run ids; a file that is no run's record is not one."""
    import json

    from isoflow.optimize.runs import discover

    stems = [
        optimisation_run("glue/sst2", "minilm", 0).path(tmp_path),
        optimisation_run("polarity", "glove-50d", 1, head="mlp2").path(tmp_path),
        optimisation_run("polarity", "minilm", 0, istar_lambda=-5.0).path(tmp_path),
        optimisation_run("glue/mrpc", "minilm", 3, istar_lambda=0.5, head="mlp1").path(tmp_path),
    ]
    for stem in [*stems, f"{tmp_path}/optimize/runs/polarity/minilm/seeds"]:  # a grouped job's log stem is no run
        Path(stem).parent.mkdir(parents=True, exist_ok=True)
        Path(stem + ".json").write_text(json.dumps({"complete": True}))
        Path(stem + ".parquet").write_text("")
    assert discover(tmp_path) == sorted(Path(s + ".json") for s in stems)
