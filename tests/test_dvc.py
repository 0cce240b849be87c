"""DVC over the workflow: stage definitions agree with the configs; a real push -> fresh clone -> `make pull` round
trip (local-directory remote and SSH remote on a loopback sshd) gives identical files and nothing for Snakemake to
do; `dvc repro` re-runs only the stage whose code changed."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
import yaml
from conftest import GIT, MAKE, OFFLINE_CONFIG, ONE_THREAD_PER_JOB, ROOT, checkout_copy, sh

OFFLINE_STAGES = [
    f"{stage}@offline"
    for stage in ("prepare", "encode", "optimize", "istar", "layers", "finetune", "pretrain", "dynamics", "report")
]
# The line dvc-configs.yaml documents for sharing the quick start's results, as this CI does.
OFFLINE_ENTRY = "  offline: {config: config/offline.yaml, data: data/offline, results: results/offline}\n"


def dvc_stages() -> dict:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]


def tracked_configs(repo: Path = ROOT) -> dict:
    return yaml.safe_load((repo / "dvc-configs.yaml").read_text())["configs"]


def test_stage_paths_agree_with_the_configs():
    documented = yaml.safe_load("configs:\n" + OFFLINE_ENTRY)["configs"]
    assert "#   " + OFFLINE_ENTRY.strip() in (ROOT / "dvc-configs.yaml").read_text()
    shipped = tracked_configs()
    assert list(shipped) == ["paper"] and shipped["paper"]["config"] == "config.yaml"
    for key, item in {**shipped, **documented}.items():
        config = yaml.safe_load((ROOT / item["config"]).read_text())
        assert (config["data_dir"], config["results_dir"]) == (item["data"], item["results"]), key
    # Every output of the workflow worth sharing is an out of some stage (logs and the raw-file cache are not): the
    # shared data, and every section's folders.
    stages = dvc_stages()
    assert all(stage["foreach"] == "${configs}" for stage in stages.values())
    outs = {
        o.replace("${item.data}", "D").replace("${item.results}", "R") for s in stages.values() for o in s["do"]["outs"]
    }
    from isoflow.sections import SECTIONS

    sections = {f"R/{name}/{part}" for name in SECTIONS for part in ("tables", "figures")} | {
        "R/optimize/aggregate",
        "R/istar/aggregate",
    }
    sections |= {f"R/{name}/runs" for name in SECTIONS if name != "pretrain"} | {
        f"R/{name}/benchmarks" for name in SECTIONS if name != "stability"
    }
    assert outs == {"D/tasks", "D/embeddings", "D/pretrain", "D/pretrained", "R/pretrain/runs"} | sections


def test_dvc_yaml_is_written_from_the_registry():
    """dvc.yaml is what scripts/generate.py writes from isoflow.sections (edit those, then run it)."""
    from isoflow.publishing import dvc_stages

    assert (ROOT / "dvc.yaml").read_text() == dvc_stages.render(), "dvc.yaml is stale: run `python scripts/generate.py`"


def test_stage_dependencies_cover_every_imported_module():
    """Each stage depends on every isoflow file its commands import (isoflow.publishing.stage_modules reads the
    imports), so a change to any of them makes `dvc status` report the stage; and on its own rule files."""

    from isoflow.publishing.stage_modules import covered, stage_commands, stage_files

    stages = dvc_stages()
    assert set(stages) == set(stage_commands())
    for name, stage in stages.items():
        deps = stage["do"]["deps"]
        missing = [str(f) for f in stage_files(name) if not covered(f, deps)]
        assert not missing, f"stage {name} lacks dependencies on {missing}"
        rules = {r for r in deps if r.startswith("rules/")}
        allowed = stage["do"]["cmd"].split("--allowed-rules ")[1].split(" $")[0].split()
        for rule in allowed:
            defined = [
                f"rules/{f.name}"
                for f in (ROOT / "rules").glob("*.smk")
                if re.search(rf"^(rule {rule}:|use rule \w+ as {rule} )", f.read_text(), re.M)
            ]
            assert set(defined) <= rules | {"rules/targets.smk"} or rule == "all", (name, rule, defined)


def test_experiments_import_nothing_from_each_other():
    """Shared code lives below the experiments: fine-tuning, the layer analysis, the optimisation and pretraining import
    nothing from each other, so a stage does not depend on another experiment's code."""

    from isoflow.publishing.stage_modules import closure

    src = ROOT / "src" / "isoflow"
    packages = ("finetune", "layers", "optimize", "pretrain")
    for package in packages:
        others = [p for p in packages if p != package]
        modules = {f"isoflow.{package}.{f.stem}" for f in (src / package).glob("*.py") if f.stem != "__init__"}
        reached = {str(f.relative_to(src)) for f in closure(modules | {f"isoflow.{package}"})}
        crossing = sorted(f for f in reached if f.split("/")[0] in others)
        assert not crossing, f"{package}/ imports {crossing}"
    stages = dvc_stages()
    for stage in ("finetune", "layers", "pretrain"):
        assert not [d for d in stages[stage]["do"]["deps"] if "isoflow/optimize" in d], stage


@pytest.mark.slow
def test_default_remote_is_configured(plan_checkout):
    p = sh(["dvc", "remote", "list"], plan_checkout)  # in a copy: DVC writes its state (.dvc/tmp) where it runs
    assert re.search(r"^shared\s+\S*isoflow-dvc-store", p.stdout, re.M), p.stdout
    assert "remote = shared" in (ROOT / ".dvc/config").read_text()


def out_checksums(repo: Path) -> dict[str, str]:
    """sha256 of every file DVC tracks for the offline config (as recorded in the working tree)."""
    sums = {}
    item = tracked_configs(repo)["offline"]
    for stage in dvc_stages().values():
        for out in stage["do"]["outs"]:
            root = repo / out.replace("${item.data}", item["data"]).replace("${item.results}", item["results"])
            for f in sorted(root.rglob("*")):
                if f.is_file():
                    sums[str(f.relative_to(repo))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return sums


def assert_nothing_to_do(repo: Path):
    p = sh(["dvc", "status"], repo)
    assert "Data and pipelines are up to date" in p.stdout, p.stdout
    p = sh(["snakemake", "-n", "--configfile", OFFLINE_CONFIG], repo)
    assert "Nothing to be done" in p.stdout + p.stderr, (p.stdout + p.stderr)[-3000:]


@pytest.fixture(scope="module")
def committed(offline_checkout) -> Path:
    """The quick start's results shared as dvc-configs.yaml documents: the offline config listed (instead of the
    paper's, which CI cannot run), recorded with `dvc commit` (as after running Snakemake directly), committed."""
    repo = offline_checkout
    (repo / "dvc-configs.yaml").write_text("configs:\n" + OFFLINE_ENTRY)
    sh(["dvc", "commit", "-f", "-q", *OFFLINE_STAGES], repo)
    assert_nothing_to_do(repo)
    sh(["git", "add", "dvc.lock", "dvc-configs.yaml"], repo)
    sh([*GIT, "commit", "-q", "-m", "offline results"], repo)
    return repo


def fresh_clone(origin: Path, name: str) -> Path:
    clone = origin.parent / name
    sh(["git", "clone", "-q", str(origin), str(clone)], origin.parent)
    assert not (clone / "results").exists()
    return clone


def pulled_clone(origin: Path, name: str) -> Path:
    """A fresh clone with the results pulled from the default remote, pushed to it first: each test that pulls stands
    alone, in any order (none relies on another's push)."""
    sh(["dvc", "push", "-q"], origin)
    clone = fresh_clone(origin, name)
    sh([*MAKE, "pull", "DVC_PULL_ARGS=-q"], clone)
    return clone


def stages_out_of_date(repo: Path) -> list[str]:
    """The offline config's stages `dvc status` reports as changed, sorted."""
    return sorted(re.findall(r"^(\S+@offline):", sh(["dvc", "status"], repo).stdout, re.M))


@pytest.mark.slow
def test_round_trip_through_the_default_local_remote(committed):
    """The offline results pushed to the default remote beside the checkout and pulled into a fresh clone: the same
    checksums, nothing left to do. Over 60 s on 2 cores: the first test of the file to ask for `committed` pays for
    building the whole offline workflow under `dvc repro` (every stage: training, layers, fine-tuning, pretraining),
    which the file's tests then share."""
    sums = out_checksums(committed)
    assert len(sums) > 40
    clone = pulled_clone(committed, "clone-local")
    store = committed.parent / "isoflow-dvc-store"  # the default remote: beside the checkout
    assert (store / "files" / "md5").is_dir()
    assert out_checksums(clone) == sums
    assert_nothing_to_do(clone)


@pytest.fixture
def sshd(tmp_path):
    env = {"SSHD_TEST_DIR": str(tmp_path / "sshd"), "SSHD_TEST_PORT": "2222"}
    start = sh(["bash", str(ROOT / "ci/sshd/start.sh")], ROOT, env=env, timeout=600, check=False)
    assert start.returncode == 0, f"the test sshd did not start: {start.stdout}{start.stderr}"
    yield tmp_path / "sshd" / "client_key"
    sh(["bash", str(ROOT / "ci/sshd/stop.sh")], ROOT, env=env, check=False)


@pytest.mark.slow
def test_round_trip_through_an_ssh_remote(committed, sshd, tmp_path):
    url = f"ssh://{os.environ.get('USER') or 'root'}@127.0.0.1:2222{tmp_path / 'ssh-store'}"

    def add_remote(repo):
        sh(["dvc", "remote", "add", "--local", "-f", "lab", url], repo)
        sh(["dvc", "remote", "modify", "--local", "lab", "keyfile", str(sshd)], repo)

    sums = out_checksums(committed)
    add_remote(committed)
    sh(["dvc", "push", "-q", "-r", "lab"], committed)
    assert (tmp_path / "ssh-store" / "files" / "md5").is_dir()
    clone = fresh_clone(committed, "clone-ssh")
    add_remote(clone)
    sh([*MAKE, "pull", "DVC_PULL_ARGS=-q -r lab"], clone)
    assert out_checksums(clone) == sums
    assert_nothing_to_do(clone)


@pytest.mark.slow
def test_touching_a_module_reports_its_stages_only(committed, tmp_path):
    """A change to the corpus reader concerns the layer analysis (its own and the checkpoints'), the pretraining corpus
    and what is made from them, nothing else. (In a copy of the committed checkout: what a pull brings back is the round
    trips' test.)"""
    clone = checkout_copy(tmp_path / "isoflow", committed)
    corpora = clone / "src/isoflow/corpora.py"
    corpora.write_text(corpora.read_text() + "\n# a change to the corpus reader only\n")
    assert stages_out_of_date(clone) == ["dynamics@offline", "layers@offline", "pretrain@offline", "report@offline"]


@pytest.mark.slow
def test_a_task_only_fine_tuning_reads_is_prepared_again(committed, tmp_path):
    """The prepare stage tracks every config value that names a prepared task, fine-tuning's too (its tasks need no
    embeddings): a task added to finetune.tasks alone changes the params of prepare and finetune, not encode's (`dvc
    repro` then remakes what is made from them too)."""
    clone = checkout_copy(tmp_path / "isoflow", committed)
    config = clone / OFFLINE_CONFIG
    text = config.read_text()
    assert "  tasks: [polarity]\n  models: [minilm]\n  istar_lambdas: [0, 1]" in text
    config.write_text(
        text.replace(
            "  tasks: [polarity]\n  models: [minilm]\n  istar",
            "  tasks: [polarity, glue/sst2]\n  models: [minilm]\n  istar",
        )
    )
    assert stages_out_of_date(clone) == ["finetune@offline", "prepare@offline"]


@pytest.mark.slow
def test_repro_reruns_only_the_changed_stage(committed):
    """A change to the analysis code only marks the report stage changed, and `dvc repro` re-makes that stage alone.
    Over 60 s on 2 cores: a clone pulled from the remote (push, clone, pull), then the report stage re-made through
    Snakemake."""
    clone = pulled_clone(committed, "clone-repro")
    before = out_checksums(clone)
    analysis = clone / "src/isoflow/optimize/report.py"
    analysis.write_text(analysis.read_text() + "\n# a change to the analysis code only\n")
    assert stages_out_of_date(clone) == ["report@offline"]
    # one thread per job, as the build it re-makes (conftest.ONE_THREAD_PER_JOB), or the stability run it remakes
    # differs in its last bits; dvc.yaml's stages take extra Snakemake options from $ISOFLOW_SNAKEMAKE
    p = sh(["dvc", "repro"], clone, env={"ISOFLOW_SNAKEMAKE": " ".join(ONE_THREAD_PER_JOB)})
    ran = re.findall(r"Running stage '([^']+)'", p.stdout)
    assert ran == ["report@offline"], p.stdout
    # Re-made from the same trajectories: byte-identical aggregate, tables and figures.
    assert out_checksums(clone) == before
    assert_nothing_to_do(clone)


def test_shared_configs_are_whole_files():
    """DVC tracks the values a stage's config file holds (params): a config shared through DVC names every value
    itself, on no base (isoflow.config_files), or a change to its base would go unseen."""
    import yaml

    configs = yaml.safe_load((ROOT / "dvc-configs.yaml").read_text())["configs"].values()
    on_a_base = [c["config"] for c in configs if "base" in (yaml.safe_load((ROOT / c["config"]).read_text()) or {})]
    assert not on_a_base, f"shared through DVC but on a base: {on_a_base}"
