"""The Snakemake workflow: lint, the full paper DAG planned, config validation, a real scaled-down run."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import (
    MAKE,
    OFFLINE_CONFIG,
    ONE_THREAD_PER_JOB,
    ROOT,
    SUITE_OFFLINE,
    assert_frames_agree_across_threads,
    checkout_copy,
    config_refusals,
    job_counts,
    placed_where_planned,
    sh,
)
from test_tiers import tiers_missing

from isoflow.optimize import runs as optimize_runs

# The scaled-down quick start's optimisation runs per seed: its pairs, then GLUE's tasks x models.
SUITE_OPTIMIZE_RUNS = len(optimize_runs.optimize_pairs(SUITE_OFFLINE["optimize"]))

PLAN: dict = {}  # the copy of the working tree the workflow's dry runs run in (set once per module)


@pytest.fixture(autouse=True, scope="module")
def _runs_in_a_copy(plan_checkout):
    PLAN["repo"] = plan_checkout


def snakemake(*args, cwd=None, check=True, env=None, timeout=1800):
    """Snakemake in ``cwd``, by default a copy of the working tree: the repository gets no workflow state."""
    return sh(["snakemake", *ONE_THREAD_PER_JOB, *args], cwd or PLAN["repo"], check=check, env=env, timeout=timeout)


def test_lint():
    out = snakemake("--lint")
    assert "Congratulations, your workflow is in a good condition!" in out.stdout + out.stderr


def documented_jobs(pattern: str) -> int:
    """The job count docs/workflow.md gives where ``pattern`` (a regex whose group is the number) matches: the
    manual is the one place of the number, the tests check it."""
    found = re.findall(pattern, (ROOT / "docs/workflow.md").read_text(encoding="utf-8"))
    assert found and len(set(found)) == 1, f"docs/workflow.md: {pattern!r} matches {found}"
    return int(found[0])


@pytest.mark.slow
def test_posters_config_plans_on_the_slurm_profile(tmp_path):
    """config/posters.yaml (the posters' models from the hub, on GPUs): its dry run through the SLURM profile, the job
    count docs/workflow.md gives, and the authors' settings reaching the commands."""
    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    out = snakemake(
        "-n", "-p", "--profile", "slurm", "--configfile", "config/posters.yaml", *where, env={"HF_HUB_OFFLINE": "1"}
    )
    counts = job_counts(out.stdout + out.stderr)
    # 5 GLUE tasks x (BERT, ALBERT, DistilBERT) x (8 lambdas + CosReg) x 5 seeds; (BERT, DistilBERT, GPT-2) x
    # (WikiText-2, PTB); a bag-of-words baseline per task
    assert counts["finetune_run"] == 5 * 3 * 9 * 5 and counts["layers_run"] == 3 * 2 and counts["prepare"] == 5
    assert counts["finetune_baseline"] == 5
    assert counts["total"] == documented_jobs(r"config/posters\.yaml.*?(\d+) jobs")
    commands = out.stdout
    assert "isoflow layers --model gpt2 --model-name gpt2 --corpus ptb" in commands
    cosreg = next(line for line in commands.splitlines() if "isoflow finetune" in line and "--cosreg-weight 1" in line)
    plain = next(line for line in commands.splitlines() if "isoflow finetune" in line and "--istar-lambda 0 " in line)
    assert "--points tokens-last-layer" in cosreg and "--points tokens-all-layers" in plain
    assert "--shrinkage-points 250000" in plain and "--lr 1e-05" in plain and "--layer-geometry" in plain
    assert placed_where_planned(commands) == counts["finetune_run"]


def test_the_paper_configs_layer_jobs_ask_slurm_for_what_their_plan_says(tmp_path):
    """Under the SLURM profile each layer run of the paper config asks for the memory, disk and runtime
    isoflow.layers.plan gives its model's shape (a built-in's published one; the plain LMs' from their pretraining
    settings) at the config's settings — not one fixed request for every model."""
    from isoflow.config_files import load
    from isoflow.layers import LayerSettings
    from isoflow.layers.plan import planned_resources
    from isoflow.models.shapes import PUBLISHED
    from isoflow.pretrain.settings import PretrainSettings
    from isoflow.settings import from_values

    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    out = snakemake("-n", "--profile", "slurm", "layers_runs", *where).stdout
    jobs = re.findall(
        r"rule layers_run:\n(?:    .*\n)*?    wildcards: model=([\w.-]+), corpus=\S+\n    resources: (.*)", out
    )
    plain = PretrainSettings().model_shape()
    settings = from_values(LayerSettings, load("config.yaml", ROOT)["layers"])
    assert len(jobs) == 5 * 2
    for model, line in jobs:
        asked = {k: int(v) for k, v in re.findall(r"\b(mem_mb|disk_mb|runtime)=(\d+)", line)}
        assert asked == planned_resources(PUBLISHED.get(model, plain), settings), model
    asked = {model: re.search(r"mem_mb=(\d+)", line)[1] for model, line in jobs}
    assert len(set(asked.values())) >= 4  # MiniLM, mpnet, GloVe and the plain LMs each their own


def test_an_own_models_dtype_layers_and_placement_reach_its_commands_and_its_plan(tmp_path):
    """own.models.<name>.dtype: every job loading the model is given --dtype, and its layer run's request is planned
    for the weights in that dtype (a folder whose safetensors header declares a 1B float32 model: read, never
    loaded, by the plan); own.models.<name>.layers: its layer run measures that subset (--layers), planned for it;
    .device_map: its layer run spreads the weights so (--device-map)."""
    import struct

    from isoflow.config_files import load
    from isoflow.layers import LayerSettings
    from isoflow.layers.plan import planned_resources
    from isoflow.models.shapes import folder_shape
    from isoflow.settings import from_values

    big = tmp_path / "big"
    big.mkdir()
    (big / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16}))
    header = json.dumps({"w": {"dtype": "F32", "shape": [1_000_000, 1_000], "data_offsets": [0, 4 * 10**9]}}).encode()
    (big / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    config = {
        "base": "config/offline.yaml",
        "data_dir": str(tmp_path / "data"),
        "results_dir": str(tmp_path / "results"),
        "own": {"models": {"big": {"path": str(big), "dtype": "bfloat16"}}},
        "layers": {"models": ["big"], "static": [], "corpora": ["brown"], "cross": []},
    }
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(config))
    out = snakemake("-n", "-p", "layers_runs", "--configfile", str(tmp_path / "big.yaml")).stdout
    job = re.search(r"rule layers_run:\n(?:    .*\n)*?    resources: (.*)\n(?:.*\n)*?Shell command: (.*)", out)
    assert f"--model {big} --model-name big --dtype bfloat16 " in job[2]
    settings = from_values(LayerSettings, load(str(tmp_path / "big.yaml"), ROOT)["layers"])
    bf16, f32 = (planned_resources(folder_shape(big), settings, dtype=d)["mem_mb"] for d in ("bfloat16", "auto"))
    assert f"mem_mb={bf16}," in job[1] and bf16 < f32 - 1800  # 2 GB of weights fewer
    assert "--layers" not in job[2]
    config["own"]["models"]["big"].update(layers="::4,-1", device_map="auto")  # 17 states: 0, 4, 8, 12, 16
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(config))
    out = snakemake("-n", "-p", "layers_runs", "--configfile", str(tmp_path / "big.yaml")).stdout
    job = re.search(r"rule layers_run:\n(?:    .*\n)*?    resources: (.*)\n(?:.*\n)*?Shell command: (.*)", out)
    assert " --layers ::4,-1 --device-map auto --device " in job[2]
    subset = planned_resources(folder_shape(big), settings, dtype="bfloat16", layers="::4,-1")
    assert all(f"{k}={v}," in job[1] + "," for k, v in subset.items())
    every = planned_resources(folder_shape(big), settings, dtype="bfloat16")
    assert subset["disk_mb"] < every["disk_mb"] / 3 and subset["runtime"] < every["runtime"]  # 5 states of 17 stored


@pytest.mark.slow
def test_full_paper_config_plans_completely(tmp_path):
    out = snakemake("-n", "-p", "--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results")
    counts = job_counts(out.stdout + out.stderr)
    assert placed_where_planned(out.stdout) == counts["optimize_run"] + counts["istar_run"] + counts["finetune_run"]
    # 4 main + 8 GLUE tasks; 4 + 8x3 (task, model) pairs; 5 seeds each, grouped (group_seeds: one GPU job per pair).
    # The I-STAR sweep: 7 tasks x MiniLM x 7 non-zero weights, 5 seeds a job (its lambda = 0 runs are the optimize
    # section's).
    assert counts["prepare"] == 12 and counts["encode"] == 28 and counts["optimize_run"] == 4 + 24
    assert counts["istar_run"] == 7 * 7
    assert counts["optimize_aggregate"] == counts["optimize_report"] == counts["all"] == 1
    assert counts["istar_aggregate"] == counts["istar_report"] == 1
    # Cai et al. across layers: (MiniLM, mpnet, the two plain LMs, GloVe) x (Brown, WikiText-2), one report.
    assert counts["layers_run"] == 5 * 2 and counts["layers_report"] == 1
    # Fine-tuning: 4 GLUE tasks x (MiniLM, mpnet) x (8 I-STAR weights + CosReg) x 5 seeds, one report; the stability
    # study.
    assert counts["finetune_run"] == 4 * 2 * 9 * 5 and counts["finetune_report"] == 1 and counts["stability_run"] == 1
    assert counts["finetune_baseline"] == 4  # a bag-of-words baseline per task
    # The plain LMs: their corpus, two models, their report.
    assert counts["pretrain_corpus"] == 1 and counts["pretrain_model"] == 2 and counts["pretrain_report"] == 1
    # Geometry across training: each plain LM at the 20 checkpoints of its series, one report.
    assert counts["dynamics_run"] == 2 * 20 * 2 and counts["dynamics_report"] == 1  # every token; the last tokens
    # ... and each checkpoint compared with the next and with the last: 2 x 20 - 3 pairs a series
    assert counts["dynamics_cka"] == 2 * 37
    # + 6 reports: 2 optimize, 2 istar, layers, stability
    assert counts["total"] == 12 + 28 + 28 + 49 + 10 + 6 + 361 + 4 + 1 + 4 + 81 + 74
    assert counts["total"] == documented_jobs(r"compared with the next and\s+the last\): (\d+) jobs")
    # Ungrouped, the same runs are one job per seed.
    ungrouped = job_counts(
        snakemake(
            "-n",
            "--quiet",
            "rules",
            "--config",
            f"data_dir={tmp_path}/data",
            f"results_dir={tmp_path}/results",
            "optimize={'group_seeds': False}",
        ).stdout
    )
    assert ungrouped["optimize_run"] == 28 * 5 and ungrouped["istar_run"] == 49 * 5


@pytest.mark.parametrize(
    "configfile, jobs",
    [
        (
            "config/offline.yaml",
            {
                "prepare": 4,
                "encode": 5,
                "optimize_run": 5,
                "istar_run": 2,
                "layers_run": 3,
                "layers_cross": 1,
                "finetune_run": 4,
                "finetune_baseline": 1,
                "finetune_baseline_all_training": 1,
                "stability_run": 1,
                "pretrain_model": 1,
                "dynamics_run": 3,
                "dynamics_cka": 3,
            },
        ),
        (
            "config/reproduce-offline.yaml",
            {
                "prepare": 9,
                "encode": 14,
                "optimize_run": 14 * 5,
                "istar_run": (4 * 7 + 2 * 4) * 2,
                "layers_run": 7,
                "layers_cross": 4,
                "finetune_run": 2 * 6 * 3,
                "finetune_baseline": 2,
                "finetune_baseline_all_training": 2,  # its runs train on 10,000 examples
                "stability_run": 1,
                "pretrain_model": 2,
            },
        ),
        ("config/supersense-ablation.yaml", {"prepare": 2, "encode": 6, "optimize_run": 12}),
        (
            "config/finetune-longer.yaml",
            {"prepare": 1, "finetune_run": 2 * 3, "finetune_baseline": 1, "finetune_baseline_all_training": 1},
        ),
        # Six pretraining runs, each measured at its 20 checkpoints on one corpus on two kinds of point, each checkpoint
        # compared with the next and the last (2 x 20 - 3 pairs a series); and the report.
        ("config/training-dynamics.yaml", {"pretrain_model": 6, "dynamics_run": 6 * 20 * 2, "dynamics_cka": 6 * 37}),
    ],
)
def test_shipped_configs_plan(configfile, jobs, tmp_path):
    where = [f"data_dir={tmp_path}/data", f"raw_dir={tmp_path}/raw", f"results_dir={tmp_path}/results"]
    plan = snakemake("-n", "-p", "--configfile", configfile, "--config", *where).stdout
    counts = job_counts(plan)
    placed = placed_where_planned(plan)
    assert placed == sum(counts.get(r, 0) for r in ("finetune_run", "finetune_lr_run", "optimize_run", "istar_run"))
    # + all; + aggregate, report; + the sweep's aggregate and report; + the layers report; + the finetune report;
    # + the pretraining corpus and report; + the dynamics report
    extra = (
        1
        + 2 * ("optimize_run" in jobs)
        + 2 * ("istar_run" in jobs)
        + ("layers_run" in jobs)
        + ("finetune_run" in jobs)
        + 2 * ("pretrain_model" in jobs)
        + ("dynamics_run" in jobs)
    )
    assert {k: counts[k] for k in jobs} == jobs and counts["total"] == sum(jobs.values()) + extra


def test_a_hub_series_is_planned_at_its_listed_revisions(tmp_path):
    """A hub model at listed revisions (Pythia's checkpoints) as a dynamics series: one job per revision × kind of
    point, each `isoflow layers` of the hub id at `--revision`, named <series>-<revision>; one layers-cross job per
    pair of checkpoints (each with the next, each with the last); SLURM-ready, nothing downloaded by planning."""
    corpus = tmp_path / "notes.txt"
    corpus.write_text("a few words\n")
    config = {
        "base": "config/offline.yaml",
        "data_dir": str(tmp_path / "data"),
        "results_dir": str(tmp_path / "results"),
        "own": {"models": {"pythia-160m": {"hub": "EleutherAI/pythia-160m"}}, "corpora": {"notes": str(corpus)}},
        "dynamics": {"series": ["pythia-160m"], "revisions": ["step0", "step1000", "step143000"], "corpora": ["notes"],
                     "points": ["tokens", "last-token"]},
    }  # fmt: skip
    (tmp_path / "series.yaml").write_text(yaml.safe_dump(config))
    out = snakemake("-n", "-p", "dynamics_runs", "--configfile", str(tmp_path / "series.yaml")).stdout
    assert job_counts(out)["dynamics_run"] == 3 * 2 and job_counts(out)["dynamics_cka"] == 3
    commands = [line for line in out.splitlines() if "isoflow layers" in line]
    runs = tmp_path / "results/dynamics/runs"
    assert any(
        "--model EleutherAI/pythia-160m --model-name pythia-160m-step1000 --revision step1000" in c
        and "--types last-token" in c
        and f"--out {runs}/pythia-160m/notes/last-token/step1000 " in c
        for c in commands
    )
    assert any(
        "--model EleutherAI/pythia-160m --model-name pythia-160m-step0 --revision step0 --other EleutherAI/pythia-160m "
        "--other-name pythia-160m-step143000 --other-revision step143000" in c
        for c in commands
    )


def test_a_grouped_job_is_given_the_seeds_it_planned(tmp_path):
    """group_seeds: one job per task x model runs every seed; its command names the seeds the rule planned (the
    config's, or istar.seeds for the sweep), not read back from its file names."""
    where = [f"data_dir={tmp_path}/data", f"raw_dir={tmp_path}/raw", f"results_dir={tmp_path}/results"]
    settings = [
        "optimize={'group_seeds': True, 'seeds': [3, 1]}",
        "istar={'tasks': ['glue/wnli'], 'models': ['minilm'], 'istar_lambdas': [0, 5], 'seeds': [1]}",
    ]
    out = snakemake(
        "-n", "-p", "optimize_runs", "istar_runs", "--configfile", OFFLINE_CONFIG, "--config", *where, *settings
    ).stdout
    optimize = re.findall(r"isoflow optimize --task (\S+) --model (\S+) (.*)--seeds (\S+) --results (\S+) ", out)
    istar = [run[:2] + run[3:] for run in optimize if "--istar-lambda 5 " in run[2]]
    assert istar == [("glue/wnli", "minilm", "1", f"{tmp_path}/results")]
    others = [run for run in optimize if "--istar-lambda" not in run[2]]
    assert len(others) > 3 and all(seeds == "3,1" and results == f"{tmp_path}/results" for *_, seeds, results in others)
    assert len(optimize) == len(others) + 1 and placed_where_planned(out) == len(optimize)  # each seed's place planned


@pytest.mark.parametrize("layers", [1, 2])
def test_nonlinear_head_configs_plan_the_linear_sweeps_runs_one_folder_deeper(layers, tmp_path):
    """config/nonlinear-head.yaml and -2: the I-STAR sweep's 6 tasks x MiniLM x lambda in {-1, 0, 1} x 2 seeds with a
    head of 1 or 2 hidden layers, whose runs go below the model in mlp1/ or mlp2/ (never over the linear ones), and
    the published linear sweep aggregated as the baseline."""
    config = f"config/nonlinear-head{'' if layers == 1 else '-2'}.yaml"
    where = [f"data_dir={tmp_path}/data", f"raw_dir={tmp_path}/raw", f"results_dir={tmp_path}/results"]
    out = snakemake("-n", "-p", "istar", "--configfile", config, "--config", *where).stdout
    counts = job_counts(out)
    assert {k: counts[k] for k in ("istar_run", "optimize_run", "istar_baseline_aggregate")} == {
        "istar_run": 6 * 2 * 2,
        "optimize_run": 6 * 2,
        "istar_baseline_aggregate": 1,
    }
    ours = {p for p in re.findall(r"[^\s,]+seed\d\.parquet", out) if p.startswith(f"{tmp_path}/results/")}
    assert len(ours) == 36 and all(f"/minilm/mlp{layers}/" in p for p in ours)
    # the hidden output measured at 50 log-spaced updates, and its figure among the report's outputs
    assert out.count("--hidden-updates 50") == 36 and f"{tmp_path}/results/istar/figures/istar_hidden.png" in out


TOY_SECTION = ROOT / "tests/toy_section"


@pytest.mark.slow
def test_a_section_of_your_own_is_its_package_one_entry_its_rules_and_its_overlay(tmp_path):
    """A section "toy" added as its author would (tests/toy_section): its package (science, settings class, commands),
    one entry in isoflow.sections (and a publication), its input functions and rules, a caption per table and figure,
    and its config, an overlay. Nothing else is edited: `isoflow` offers its commands, the config schema takes its
    settings class's keys (and refuses others), `runs` and the default target include it, the Makefile offers its
    reproduce target, its DVC stage depends on its package, and `snakemake toy` runs it, writing what its library
    computes; the one generator (scripts/generate.py) gives it its place in the import contract, which then holds.
    Over 60 s on the slower 2-core machines: ten processes (three dry runs, one run, the CLI, make, the generator,
    the import linter, the DVC stage list, the library), most of them importing Snakemake or torch."""
    repo = checkout_copy(tmp_path / "isoflow")
    added = [p for p in TOY_SECTION.rglob("*") if p.is_file() and p.name not in ("README.md", "registry.py")]
    for path in added:
        (repo / path.relative_to(TOY_SECTION)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, repo / path.relative_to(TOY_SECTION))
    with open(repo / "src/isoflow/sections.py", "a") as fh:
        fh.write((TOY_SECTION / "registry.py").read_text().split("Section\n", 1)[1])  # below its import
    env = {"PYTHONPATH": str(repo / "src")}
    where = [f"data_dir={tmp_path}/data", f"raw_dir={tmp_path}/raw", f"results_dir={tmp_path}/results"]
    toy = ["--configfile", "config/toy.yaml", "--config", *where]
    plan = lambda *target: job_counts(sh(["snakemake", "-n", *target, *toy], repo, env=env).stdout)  # noqa: E731
    runs, everything = plan("runs"), plan()
    assert runs["toy_run"] == 2 and "toy_report" not in runs and runs["optimize_run"] > 0
    assert (everything["toy_run"], everything["toy_report"]) == (2, 1) and everything["optimize_report"] == 1
    assert (
        "scripts/publish_results.py toy --reproduce"
        in sh([*MAKE, "-n", "reproduce", "PYTHON=python"], repo, env=env).stdout
    )
    assert "toy-report" in sh([sys.executable, "-m", "isoflow.cli", "--help"], repo, env=env).stdout
    # the one generator: its DVC stages, its glossary row and its place in the import contract's sections tier
    sh([sys.executable, "scripts/generate.py"], repo, env=env)
    assert tiers_missing(repo) == (set(), set()) and "| toy" in (repo / "pyproject.toml").read_text()
    assert "1 kept, 0 broken" in sh(["lint-imports", "--no-cache"], repo, env=env).stdout
    stages = sh([sys.executable, "-m", "isoflow.publishing.stage_modules"], repo, env=env).stdout
    assert "src/isoflow/toy" in stages.split("toy:")[1].split("report:")[0]
    (repo / "config/bad.yaml").write_text("base: config/toy.yaml\ntoy: {points: 1, colour: red}\n")
    bad = sh(["snakemake", "-n", "--configfile", "config/bad.yaml"], repo, env=env, check=False)
    assert bad.returncode != 0 and "'colour' is not a key here; allowed: dim, points, seeds" in bad.stderr, bad.stderr
    assert "toy.points" in bad.stderr and "minimum" in bad.stderr.replace("at least", "minimum"), bad.stderr
    sh(["snakemake", "toy", "--cores", "1", *toy], repo, env=env)
    table = pd.read_csv(tmp_path / "results/toy/tables/toy.csv")
    library = "import json; from isoflow.toy import ToySettings, measure; "
    library += "print(json.dumps([measure(s, ToySettings(points=64)) for s in (0, 1)]))"
    expected = [r["isoscore"] for r in json.loads(sh([sys.executable, "-c", library], repo, env=env).stdout)]
    assert table["seed"].tolist() == [0, 1] and np.allclose(table["isoscore"], expected, rtol=1e-12)
    assert 0.05 < min(expected) < max(expected) < 0.5  # scales 1/(i + 1) in 8 dimensions: far from both ends
    assert (tmp_path / "results/toy/figures/toy.png").stat().st_size > 0


def test_configs_that_share_a_pretrained_model_declare_it_alike():
    """Configs whose pretrain sections write into the same data_dir share the models' folders (a model is trained
    once): every model they both name must be declared alike, corpus and shared settings included, or one config
    would use a model the other trained differently."""
    from isoflow.config_files import load

    configs = {
        c: load(c, ROOT)
        for c in ["config.yaml", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "config").glob("*.yaml"))]
    }
    by_folder = {}
    for name, config in configs.items():
        if config.get("pretrain"):
            by_folder.setdefault(config.get("data_dir", "data"), []).append(name)
    shared = {folder: names for folder, names in by_folder.items() if len(names) > 1}
    assert {"config/finetune-plain.yaml", "config/reproduce-offline.yaml"} <= set(shared["data/reproduce-offline"])
    for names in shared.values():
        first = configs[names[0]]["pretrain"]
        for other in names[1:]:
            theirs = configs[other]["pretrain"]
            both = set(first["models"]) & set(theirs["models"])
            assert both and all(first["models"][m] == theirs["models"][m] for m in both), (names[0], other)
            for key in ("corpus", "training"):
                assert first.get(key) == theirs.get(key), (names[0], other, key)


@pytest.mark.slow
def test_a_config_on_a_base_is_the_base_with_its_own_keys_on_top(tmp_path, plan_checkout):
    """config/nonlinear-head-2.yaml names only what it changes on top of config/nonlinear-head.yaml (`base:`): the
    merged config is the one-layer config with head_layers and results_dir changed, and the workflow plans it so; a
    missing or circular base is refused in one line."""
    from isoflow.config_files import load

    two = yaml.safe_load((ROOT / "config/nonlinear-head-2.yaml").read_text())
    assert set(two) == {"base", "optimize", "results_dir"} and two["optimize"] == {"head_layers": 2}
    one, merged = load("config/nonlinear-head.yaml", ROOT), load("config/nonlinear-head-2.yaml", ROOT)
    assert {k for k in one.keys() | merged.keys() if one.get(k) != merged.get(k)} == {"optimize", "results_dir"}
    assert merged["optimize"] == {**one["optimize"], "head_layers": 2}  # the rest of the section: its base's
    assert "head_layers" not in one["optimize"]  # one: the class's default, 1
    for base, says in (("config/nowhere.yaml", "does not exist"), (str(tmp_path / "loop.yaml"), "comes back to")):
        (tmp_path / "loop.yaml").write_text(f"base: {tmp_path / 'loop.yaml'}\n")
        (tmp_path / "mine.yaml").write_text(f"base: {base}\noptimize: {{seeds: [0]}}\n")
        (problem,) = config_refusals(configfile=tmp_path / "mine.yaml")
        assert problem.startswith("base: ") and says in problem, problem


@pytest.mark.slow
def test_named_targets(tmp_path):
    """Every section's target (its tables and figures) and runs target (its runs) by its registered name; the shared
    data's targets; `runs` and `all`."""
    from isoflow.sections import SECTIONS

    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    expect = {
        "datasets": {"prepare": 12},
        "embeddings": {"prepare": 12, "encode": 28},
        "istar_runs": {"prepare": 7, "encode": 7, "istar_run": 49, "optimize_run": 7},
        "optimize_runs": {"prepare": 12, "encode": 28, "optimize_run": 28},
        "optimize": {"prepare": 12, "encode": 28, "optimize_run": 28},
    }
    for target, jobs in expect.items():
        counts = job_counts(snakemake("-n", target, *where).stdout)
        assert {k: v for k, v in counts.items() if k in ("prepare", "encode", "optimize_run", "istar_run")} == jobs, (
            target
        )
    # The targets the README names (and the rules DVC's stages call) are exactly these.
    listed = set(snakemake("--list-target-rules").stdout.split())
    named = (
        {"all", "datasets", "embeddings", "runs", "report"}
        | set(SECTIONS)
        | {s.runs_target for s in SECTIONS.values() if s.run_rules}
    )
    assert named <= listed
    reports = {r for s in SECTIONS.values() for r in s.report_rules}
    assert reports <= listed and listed - named - reports == {"pretrain_corpus"}  # the only run rule without wildcards


@pytest.mark.slow
def test_a_config_file_runs_what_it_names_and_nothing_of_config_yaml(tmp_path):
    """--configfile replaces config.yaml: a file naming only GLUE's WNLI x MiniLM plans that pair alone (a section it
    leaves out is off, never config.yaml's), every other key at its default; a GLUE task is spelled glue/<task>."""
    mine = tmp_path / "mine.yaml"
    where = f"data_dir: {tmp_path}/data\nresults_dir: {tmp_path}/results\n"
    mine.write_text(
        where + "optimize: {seeds: [0], steps: {default: 2, glue: 2}, glue: {tasks: [wnli], models: [minilm]}}"
    )
    assert config_refusals(configfile=mine)[0].startswith("optimize.glue.tasks[0]: 'wnli' is not one of glue/cola")
    mine.write_text(mine.read_text().replace("[wnli]", "[glue/wnli]"))
    counts = job_counts(snakemake("-n", "--configfile", str(mine)).stdout)
    assert {k: v for k, v in counts.items() if k not in ("all", "total")} == {
        "prepare": 1,
        "encode": 1,
        "optimize_run": 1,
        "optimize_aggregate": 1,
        "optimize_report": 1,
    }


def test_names_and_defaults_agree_everywhere():
    """One fact, many copies: the schema's enums are the registries' names, and its defaults the library's and CLI's."""
    import yaml

    from isoflow.cli import build_parser
    from isoflow.config_schema import load as load_schema
    from isoflow.datasets import GLUE_TASKS, WORD_TASKS
    from isoflow.finetune import FinetuneSettings
    from isoflow.istar import DEFAULT_ZETA
    from isoflow.layers import LayerSettings
    from isoflow.models import GGUF_MODELS, MODELS, SENTENCE_MODELS, STATIC_MODELS
    from isoflow.optimize import Settings, default_steps

    schema = load_schema(ROOT / "schemas/config.schema.yaml")["properties"]
    enum = lambda *path: set(_walk(schema, path)["enum"])  # noqa: E731
    # Where the schema lists built-in names in a description (the config check reads the registries themselves).
    listed = lambda *path: set(_walk(schema, path)["description"].split(", or ")[0].split(", "))  # noqa: E731
    pairs, glue = ("optimize", "properties", "pairs", "items", "properties"), ("optimize", "properties", "glue")
    assert listed(*pairs, "task") == {"polarity", "snli", *WORD_TASKS}
    assert listed(*pairs, "model") == set(MODELS)
    assert enum(*glue, "properties", "tasks", "items") == {f"glue/{t}" for t in GLUE_TASKS}
    assert listed(*glue, "properties", "models") == set(SENTENCE_MODELS)
    assert listed("finetune", "properties", "models") == {*SENTENCE_MODELS, *GGUF_MODELS}
    assert enum("layers", "properties", "static", "items") == set(STATIC_MODELS)
    # Defaults: schema = library = CLI.
    commands = build_parser()._subparsers._group_actions[0].choices
    cli = {name: {a.dest: a.default for a in p._actions} for name, p in commands.items()}
    assert (
        schema["optimize"]["properties"]["sample_cap"]["default"]
        == Settings("t", "m", 0, 1).sample_cap
        == cli["optimize"]["sample_cap"]
        == 20_000
    )
    assert (
        cli["optimize"]["zeta"] == cli["finetune"]["zeta"] == DEFAULT_ZETA
        and cli["optimize"]["lr"] == Settings("t", "m", 0, 1).lr
    )
    assert (
        cli["finetune"]["lr"] == FinetuneSettings("t", "m", 0).lr
        and cli["finetune"]["batch_size"] == FinetuneSettings("t", "m", 0).batch_size
    )
    assert cli["layers"]["k_lid"] == LayerSettings().k_lid and cli["layers"]["sample_cap"] == LayerSettings().sample_cap
    assert (
        cli["layers"]["min_silhouette"] == LayerSettings().min_silhouette
        and cli["layers"]["k_max"] == LayerSettings().k_max
    )
    assert (
        schema["istar"]["properties"]["zeta"]["default"]
        == DEFAULT_ZETA
        == Settings("t", "m", 0, 1).zeta
        == FinetuneSettings("t", "m", 0).zeta
    )
    assert schema["layers"]["properties"]["k_lid"]["default"] == LayerSettings().k_lid == 100
    assert schema["finetune"]["properties"]["lr"]["default"] == FinetuneSettings("t", "m", 0).lr
    steps = schema["optimize"]["properties"]["steps"]["default"]
    assert (steps["default"], steps["glue"]) == (default_steps("polarity"), default_steps("glue/cola")) == (1000, 250)
    assert "steps" not in yaml.safe_load((ROOT / "config.yaml").read_text())["optimize"]  # the default, not pasted


def _walk(tree, path):
    for key in path:
        tree = tree[key]
    return tree


@pytest.mark.slow
def test_invalid_config_is_refused():
    """Mistakes given with `--config` stop Snakemake before anything is planned, one line each naming the config file:
    the lines conftest.config_refusals gives in this process (which the other config tests use), on the terminal."""
    entries = ["optimize={'seeds': []}", "seeds=[0]"]  # a key under its former place: told where it is now
    problems = config_refusals(*entries)
    assert problems == [
        "seeds is now optimize.seeds (rename or move the key)",
        "optimize.seeds: [] should be non-empty",
    ]
    bad = snakemake("-n", "--config", *entries, check=False)
    assert bad.returncode != 0 and bad.stderr.splitlines() == [f"config.yaml: {line}" for line in problems]
    assert config_refusals("device=gpu0") == ["device: 'gpu0' does not match '^(auto|cpu|cuda(:[0-9]+)?)$'"]


def test_a_config_in_the_former_layout_is_told_where_each_key_went(tmp_path):
    """Keys under their former names or places are refused, one line each saying where they are now (and a required
    key they stand in for is not also reported missing)."""
    old = tmp_path / "old.yaml"
    old.write_text("seeds: [0]\npaper: []\nistar: {tasks: [polarity], models: [minilm], lambdas: [0, 1]}\n")
    assert config_refusals(configfile=old) == [
        "paper is now optimize.pairs (rename or move the key)",
        "seeds is now optimize.seeds (rename or move the key)",
        "istar.lambdas is now istar.istar_lambdas (rename or move the key)",
    ]


@pytest.mark.slow
def test_offline_config_runs_for_real(offline_checkout):
    """The README's quick start (`make run`) in a fresh checkout: real tables and figures, then nothing to do."""
    results = offline_checkout / "results/offline"  # each section under its own folder
    corr = pd.read_csv(results / "optimize/tables/correlations.csv")
    assert set(corr["task"]) == {p["task"] for p in SUITE_OFFLINE["optimize"]["pairs"]}
    glue = pd.read_csv(results / "optimize/tables/correlations_glue.csv")
    assert (corr["pearson_r"].abs() <= 1).all() and list(glue["model"]) == SUITE_OFFLINE["optimize"]["glue"]["models"]
    traj = pd.read_parquet(results / "optimize/runs/glue/wnli/minilm/seed0.parquet")
    assert traj["step"].max() == 10 and traj["isoscore"].iloc[-1] < traj["isoscore"].iloc[0]
    runs = pd.read_csv(results / "optimize/aggregate/runs.csv")
    assert len(runs) == SUITE_OPTIMIZE_RUNS and set(runs["steps"]) == {20, 10}  # the pairs, then GLUE's
    # The I-STAR sweep (WNLI x MiniLM x lambda in {-5, 0, 5}) and the layer analysis (MiniLM, a plain GPT-2 of our own
    # and
    # GloVe x Brown).
    sweep = pd.read_csv(results / "istar/tables/istar.csv")
    assert list(sweep.istar_lambda) == [-5, 0, 5] and sweep["isoscore_mean"].is_monotonic_increasing
    layers = pd.read_csv(results / "layers/tables/layers.csv")
    assert sorted(set(layers["model"])) == ["glove-50d", "minilm", "plain-tiny-gpt2"] and len(layers) == 7 + 3 + 1
    tuned = pd.read_csv(results / "finetune/tables/finetune.csv")
    assert list(zip(tuned["reg"], tuned.istar_lambda)) == [
        ("cosreg", 0),
        ("istar", 0),
        ("istar", 1),
    ] and set(tuned["seeds"]) == {1}
    assert (
        len(pd.read_csv(results / "finetune/tables/finetune_paired.csv")) == 2
        and (results / "stability/tables/stability.csv").is_file()
    )
    # the bag of words on the runs' 128 training sentences and on all of them; MiniLM's 7 states against the plain
    # GPT-2's 3 on the same words, with and without each sentence's first
    controls = pd.read_csv(results / "finetune/tables/finetune_controls.csv")
    trained_on = sorted(controls[controls.model == "bag-of-words"]["n_train"])
    assert trained_on[0] == SUITE_OFFLINE["finetune"]["max_train"] and len(trained_on) == 2 and trained_on[1] > 1000
    cross = pd.read_csv(results / "layers/tables/layers_cross.csv")
    assert len(cross) == 2 * 7 * 3 and set(zip(cross.model_a, cross.model_b)) == {("minilm", "plain-tiny-gpt2")}
    pretrained = pd.read_csv(results / "pretrain/tables/pretrain.csv")
    assert (
        list(pretrained["model"]) == ["plain-tiny-gpt2"]
        and pretrained.loc[0, "heldout_loss"] < pretrained.loc[0, "unigram_loss"] + 1
    )
    figures = {
        "istar": ("istar_performance", "istar_curves", "istar_silhouette_vs_isoscore"),
        "layers": ("layers_similarity", "layers_lid", "layers_pca"),
        "finetune": (
            "finetune_performance",
            "finetune_twonn",
            "finetune_baselines",
            "finetune_activations",
            "finetune_epochs",
        ),
        "stability": ("stability",),
        "pretrain": ("pretrain_curves",),
    }
    for section, names in figures.items():
        for name in names:
            assert (results / section / f"figures/{name}.png").stat().st_size > 5000
    for name in ("silhouette", "log_isoscore", "silhouette_vs_isoscore"):
        assert (results / f"optimize/figures/{name}.pdf").stat().st_size > 1000
    # The jobs' logs say how far each run got: a line per tenth of the updates (here 10 updates: a line each).
    log = (offline_checkout / "logs/optimize/glue/wnli/minilm/seed0.log").read_text().splitlines()
    progress = [line for line in log if re.match(r"glue/wnli x minilm seed 0: (started, 10 upd$|\d+/10 upd \()", line)]
    assert len(progress) == 1 + 10 and "10/10 upd (100%)" in progress[-1]  # then the run's summary line
    assert f"iso={traj['isoscore'].iloc[-1]:.4f}" in progress[-1]
    # The raw files came through the mirror into the config's raw_dir; tasks are kept apart from the paper's.
    assert (offline_checkout / "data/raw").is_dir() and (
        offline_checkout / "data/offline/tasks/supersense/meta.json"
    ).is_file()
    again = snakemake("-n", "--configfile", OFFLINE_CONFIG, cwd=offline_checkout)
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_html_report_holds_every_figure_and_table(offline_checkout):
    """`make report` (snakemake --report) for the quick start: one self-contained HTML with every figure and table."""
    p = sh([*MAKE, "report", "REPORT_CONFIG=config/offline.yaml"], offline_checkout)
    html = (offline_checkout / "results/offline/report.html").read_text()
    assert len(html) > 100_000, p.stdout[-2000:]
    from isoflow.sections import SECTIONS

    figures = sorted((offline_checkout / "results/offline").glob("*/figures/*.png"))
    tables = sorted((offline_checkout / "results/offline").glob("*/tables/*.csv"))
    assert len(figures) >= 13 and len(tables) >= 11
    for f in figures + tables:
        assert f.name in html, f"{f.name} is not in the report"
    for category in [s.title for s in SECTIONS.values()] + ["Optimisation (Mickus et al. 2024), GLUE (Appendix A)"]:
        assert category in html, category
    assert "System Message" not in html  # docutils' errors and warnings: every caption and category is valid rST


@pytest.mark.slow
def test_adding_a_seed_reruns_everything_downstream(offline_checkout, tmp_path):
    """The README's "extend a config": one more seed runs the new runs and then the aggregate, tables and figures (which
    show both seeds); `--forcerun aggregate` re-makes the tables and figures too. Over 60 s on 2 cores: a copy of the
    built offline workflow runs the new seed's runs, then every aggregate, table and figure downstream of them,
    twice."""
    repo = checkout_copy(tmp_path / "isoflow", offline_checkout)
    config = (repo / OFFLINE_CONFIG).read_text()
    assert config.index("\n  seeds: [0]\n") < config.index("\nistar:")  # the first seeds: optimize's
    (repo / OFFLINE_CONFIG).write_text(config.replace("\n  seeds: [0]\n", "\n  seeds: [0, 1]\n", 1))  # as a user would
    two = ["--configfile", OFFLINE_CONFIG]
    counts = job_counts(snakemake("-n", *two, cwd=repo).stdout)
    steps = ("optimize_run", "optimize_aggregate", "optimize_report")
    once = {"optimize_aggregate": 1, "optimize_report": 1}
    assert {k: counts.get(k) for k in steps} == {"optimize_run": SUITE_OPTIMIZE_RUNS, **once}
    assert "finetune_run" not in counts  # fine-tuning has seeds of its own
    section = repo / "results/offline/optimize"
    before = (section / "figures/silhouette.pdf").stat().st_mtime_ns
    snakemake("--cores", "2", *two, cwd=repo)
    corr = pd.read_csv(section / "tables/correlations.csv")
    glue = pd.read_csv(section / "tables/correlations_glue.csv")
    assert set(corr["seeds"]) == set(glue["seeds"]) == {2}
    assert len(pd.read_csv(section / "tables/correlations_per_run.csv")) == SUITE_OPTIMIZE_RUNS * 2
    assert (section / "figures/silhouette.pdf").stat().st_mtime_ns > before
    assert "Nothing to be done" in snakemake("-n", *two, cwd=repo).stdout
    forced = job_counts(snakemake("-n", *two, "--forcerun", "optimize_aggregate", cwd=repo).stdout)
    assert {k: forced.get(k) for k in steps} == {"optimize_run": None, "optimize_aggregate": 1, "optimize_report": 1}


@pytest.mark.slow
def test_grouped_seeds_write_the_same_records(offline_checkout, tmp_path):
    """group_seeds: one process runs a task x model's seeds; the records are those of one job per seed."""
    import json
    import shutil

    repo = checkout_copy(tmp_path / "isoflow", offline_checkout)
    for section in ("optimize", "istar"):
        shutil.rmtree(repo / f"results/offline/{section}/runs")
    grouped = ["--configfile", OFFLINE_CONFIG, "--config", "optimize={'group_seeds': True}"]
    counts = job_counts(snakemake("-n", "runs", *grouped, cwd=repo).stdout)
    # one job per task x model (x lambda), not per seed
    assert counts["optimize_run"] == SUITE_OPTIMIZE_RUNS and counts["istar_run"] == 2
    # Run two of them (a plain run and an I-STAR one) and compare with the per-seed jobs' records.
    results = offline_checkout / "results/offline"
    refs = [
        results / "optimize/runs/glue/wnli/minilm/seed0.parquet",
        results / "istar/runs/glue/wnli/minilm/istar-5/seed0.parquet",
    ]
    snakemake(*(str(ref.relative_to(offline_checkout)) for ref in refs), "--cores", "2", *grouped, cwd=repo)
    for ref in refs:
        rel = ref.relative_to(offline_checkout)
        assert_frames_agree_across_threads(pd.read_parquet(repo / rel), pd.read_parquet(ref))
        a, b = (json.loads(p.with_suffix(".json").read_text()) for p in (repo / rel, ref))
        assert a["settings"] == b["settings"] and a["complete"] and a["n_params"] == b["n_params"]


@pytest.mark.slow
def test_slurm_profile_on_a_real_cluster(offline_checkout, shared_mirror, tmp_path):
    """`snakemake --profile slurm` through a single-node SLURM cluster on localhost: same results as locally. Over 60 s
    on 2 cores: a SLURM cluster started on localhost, and the workflow's jobs submitted through sbatch, each a process
    that loads torch."""
    import shutil
    import tempfile

    # the cluster's state in a short path of its own: slurmd's step sockets live under it, and a Unix socket path is
    # at most 108 bytes (a worker's tmp_path, .../popen-gw0/test_slurm_profile_on_a_real_c0/..., is too long)
    short = Path(tempfile.mkdtemp(prefix="isoflow-slurm-"))
    cluster = {"SLURM_TEST_DIR": str(short / "cluster")}
    start = sh(["bash", str(ROOT / "ci/slurm/start.sh")], ROOT, env=cluster, timeout=600, check=False)
    if start.returncode != 0:
        shutil.rmtree(short, ignore_errors=True)
    assert start.returncode == 0, f"the test cluster did not start (needs root and apt): {start.stdout}{start.stderr}"
    try:
        # Two of the quick start's pairs, a sentence encoder (a GPU-resourced job; WNLI's 925 sentences, encoded in
        # seconds)
        # and static vectors (none), and their tables and figures: every kind of job the profile submits, in a fraction
        # of the quick start's time.
        config = yaml.safe_load((ROOT / OFFLINE_CONFIG).read_text())
        config.update(
            data_dir=f"{tmp_path}/data",
            raw_dir=f"{tmp_path}/raw",
            results_dir=f"{tmp_path}/results",
            mirror=str(shared_mirror),
        )
        config["optimize"].update(
            pairs=[{"task": "supersense", "model": "glove-50d"}], glue={"tasks": ["glue/wnli"], "models": ["minilm"]}
        )
        for section in ("istar", "layers", "finetune", "stability", "pretrain", "dynamics"):
            del config[section]
        (tmp_path / "slurm-test.yaml").write_text(yaml.safe_dump(config))
        # Status checks every 2 s, not the profile's 10 s: the jobs here take seconds, not hours.
        conf = [
            "--configfile",
            str(tmp_path / "slurm-test.yaml"),
            "--seconds-between-status-checks",
            "2",
            "--slurm-init-seconds-before-status-checks",
            "1",
        ]
        p = snakemake("--profile", "slurm", *conf, env={"SLURM_CONF": str(short / "cluster/slurm.conf")}, timeout=3600)
        out = p.stdout + p.stderr
        # Every job but the 2 local `prepare` jobs and `all`: 2 encode, 2 optimize runs, the aggregate and the report.
        assert len(re.findall(r"submitted with SLURM jobid", out)) == 6
        local = offline_checkout / "results/offline"
        refs = [
            local / "optimize/runs" / pair / "seed0.parquet" for pair in ("glue/wnli/minilm", "supersense/glove-50d")
        ]
        for ref in refs:
            got = pd.read_parquet(tmp_path / "results" / ref.relative_to(local))
            assert_frames_agree_across_threads(got, pd.read_parquet(ref))
        done = (
            "optimize/tables/correlations.csv",
            "optimize/tables/correlations_glue.csv",
            "optimize/figures/silhouette.png",
        )
        assert all((tmp_path / "results" / f).is_file() for f in done)
    finally:
        sh(["bash", str(ROOT / "ci/slurm/stop.sh")], ROOT, env=cluster, timeout=60, check=False)
        shutil.rmtree(short, ignore_errors=True)


def test_make_report_builds_what_make_run_made(tmp_path):
    """In a fresh checkout, `make report` reports `make run`'s config (not the paper config's: it did not run); after a
    run it follows the config that last ran to the end (tests/test_workflow_safety.py)."""
    fresh = checkout_copy(tmp_path / "isoflow")
    run, report = (sh([*MAKE, "-n", target], fresh).stdout for target in ("run", "report"))
    assert "--configfile config/offline.yaml" in run
    assert "--configfile config/offline.yaml --report results/offline/report.html" in report
