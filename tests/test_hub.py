"""A Hugging Face hub id wherever a model is taken: tiny models placed in a Hugging Face cache layout under hub ids and
loaded by those ids with the hub switched off (HF_HUB_OFFLINE=1), as a cluster node uses what a login node downloaded;
an id that is not cached gets one line. The commands run as a user runs them (a subprocess with its environment)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import ROOT, WORDS, sh

REVISION = "0123456789abcdef0123456789abcdef01234567"


def place_in_cache(cache, model_id: str, folder) -> None:
    """``folder`` as the snapshot of ``model_id`` in a Hugging Face hub cache (``models--org--name``, ``refs/main``)."""
    repo = cache / f"models--{model_id.replace('/', '--')}"
    shutil.copytree(folder, repo / "snapshots" / REVISION)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory, tiny_bert, tiny_gpt2):
    cache = tmp_path_factory.mktemp("hf") / "hub"
    place_in_cache(cache, "isoflow-test/tiny-bert", tiny_bert)
    place_in_cache(cache, "tiny-gpt2", tiny_gpt2)  # an id without an organisation, as gpt2
    return cache


def isoflow(args, cache, cwd):
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "isoflow.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env},
    )


@pytest.fixture
def reviews(tmp_path):
    rows = [(f"{' '.join(WORDS[i % 7 : i % 7 + 5])} {i}", "pos" if i % 2 else "neg") for i in range(40)]
    pd.DataFrame(rows, columns=["sentence", "label"]).to_csv(tmp_path / "reviews.csv", index=False)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "isoflow.cli",
            "prepare",
            "reviews",
            "--from-file",
            "reviews.csv",
            "--text",
            "sentence",
            "--label",
            "label",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    return tmp_path


@pytest.mark.slow
def test_encode_and_finetune_by_hub_id_offline(hub_cache, reviews):
    p = isoflow(
        ["encode", "--model", "isoflow-test/tiny-bert", "--task", "reviews", "--device", "cpu", "--quiet"],
        hub_cache,
        reviews,
    )
    assert p.returncode == 0, p.stderr
    meta = json.loads((reviews / "data/embeddings/tiny-bert/reviews/meta.json").read_text())
    assert meta["model"] == "tiny-bert" and meta["dim"] == 32
    assert meta["source"]["hub_id"] == "isoflow-test/tiny-bert" and meta["source"]["revision"] == REVISION
    assert list(meta["source"]["weights_sha256"]) == ["model.safetensors"]
    p = isoflow(
        [
            "finetune",
            "--task",
            "reviews",
            "--model",
            "isoflow-test/tiny-bert",
            "--model-name",
            "hub-bert",
            "--epochs",
            "1",
            "--batch-size",
            "8",
            "--heldout-fraction",
            "0.25",
            "--shrinkage-points",
            "100",
            "--device",
            "cpu",
            "--quiet",
        ],
        hub_cache,
        reviews,
    )
    assert p.returncode == 0, p.stderr
    record = json.loads((reviews / "results/finetune/runs/reviews/hub-bert/istar0/seed0.json").read_text())
    assert record["source"]["hub_id"] == "isoflow-test/tiny-bert" and record["settings"]["model"] == "hub-bert"


@pytest.mark.slow
def test_layers_of_a_causal_model_by_hub_id_offline(hub_cache, tmp_path):
    """A causal model by its hub id, from a Hugging Face cache with HF_HUB_OFFLINE=1: `isoflow layers` measures every
    layer: a layer analysis, K-means and LID in every layer, in a process that loads torch. Over 60 s in a record made
    before the processes tests start had one thread (tests/conftest.py): the command took both cores beside the other
    worker and spun waiting for them (118 CPU s in 118 s)."""
    corpus = tmp_path / "notes.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i % 11 : i % 11 + 8]) for i in range(80)) + "\n")
    p = isoflow(
        [
            "layers",
            "--model",
            "tiny-gpt2",
            "--corpus",
            str(corpus),
            "--max-tokens",
            "200",
            "--k-lid",
            "5",
            "--sample-cap",
            "200",
            "--device",
            "cpu",
            "--quiet",
        ],
        hub_cache,
        tmp_path,
    )
    assert p.returncode == 0, p.stderr
    meta = json.loads((tmp_path / "results/layers/runs/tiny-gpt2/notes/meta.json").read_text())
    assert meta["model"] == "tiny-gpt2" and meta["source"]["hub_id"] == "tiny-gpt2" and meta["n_layers"] == 3


@pytest.mark.slow
def test_an_id_neither_cached_nor_reachable_gets_one_line(hub_cache, reviews):
    p = isoflow(["encode", "--model", "bert-base-uncased", "--task", "reviews", "--quiet"], hub_cache, reviews)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "'bert-base-uncased' is not one of isoflow's models" in lines[0]
    assert f"not in the Hugging Face cache ({hub_cache})" in lines[0] and "`hf download bert-base-uncased`" in lines[0]


@pytest.mark.slow
def test_a_hub_model_in_the_workflow_config(hub_cache, tmp_path, plan_checkout, tiny_bert):
    """own.models.<name>.hub: the jobs take the id and name their outputs by the config's name."""
    config = yaml.safe_load((ROOT / "examples/own/config.yaml").read_text())
    # only the hub model: the example's model folder and vectors are not made here
    config["own"]["models"] = {"hub-bert": {"hub": "isoflow-test/tiny-bert", "dtype": "bfloat16"}}
    config["layers"]["models"] = ["hub-bert"]
    config["finetune"]["models"] = ["hub-bert"]
    config["optimize"]["pairs"] = [{"task": "reviews", "model": "hub-bert"}]
    config["istar"]["models"] = ["hub-bert"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    p = sh(
        ["snakemake", "-n", "-p", "--configfile", str(path)],
        plan_checkout,
        env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)},
    )
    commands = p.stdout
    named = "--model isoflow-test/tiny-bert --model-name hub-bert --dtype bfloat16"  # own.models.<name>.dtype
    assert f"isoflow encode {named}" in commands and f"isoflow layers {named}" in commands
    assert f"isoflow finetune --task reviews {named}" in commands
    # every command of the plan is one its parser takes (--dtype included)
    from isoflow.cli import build_parser

    lines = [line.removeprefix("Shell command: ") for line in commands.splitlines()]
    run = [shlex.split(line.split(" > ")[0])[1:] for line in lines if line.startswith("isoflow ")]
    assert len(run) > 10 and all(build_parser().parse_args(words) for words in run)
    # its layer run's request planned from the cached snapshot's shape (isoflow.layers.plan), not the fixed one
    from isoflow.layers import LayerSettings
    from isoflow.layers.plan import UNPLANNED, planned_resources
    from isoflow.models.shapes import folder_shape
    from isoflow.settings import from_values

    settings = from_values(LayerSettings, config["layers"])
    planned = planned_resources(folder_shape(tiny_bert), settings, dtype="bfloat16")
    asked = re.search(r"rule layers_run:\n(?:    .*\n)*?    resources: (.*)", commands)[1]
    assert f"mem_mb={planned['mem_mb']}," in asked and f"runtime={planned['runtime']}," in asked
    assert planned["mem_mb"] != UNPLANNED["mem_mb"]


def place_revisions(cache, model_id: str, folders: dict) -> dict:
    """Several revisions of ``model_id`` in a Hugging Face cache, as Pythia publishes its checkpoints (a branch per
    step: ``refs/step<N>`` naming the commit whose snapshot holds it); returns revision -> commit."""
    repo = cache / f"models--{model_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    commits = {}
    for i, (revision, folder) in enumerate(folders.items()):
        commits[revision] = f"{i + 1:x}" * 40
        shutil.copytree(folder, repo / "snapshots" / commits[revision])
        (repo / "refs" / revision).write_text(commits[revision])
    return commits


@pytest.fixture(scope="module")
def two_revisions(tmp_path_factory, tiny_gpt2):
    """A tiny GPT-2 at two revisions (step0, step1: other weights) under one hub id, in a cache of its own."""
    import torch
    from transformers import AutoModelForCausalLM

    later = tmp_path_factory.mktemp("later") / "tiny-gpt2"
    shutil.copytree(tiny_gpt2, later)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_gpt2))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01)
    model.save_pretrained(str(later))
    cache = tmp_path_factory.mktemp("hf-revisions") / "hub"
    return cache, place_revisions(cache, "isoflow-test/tiny-series", {"step0": tiny_gpt2, "step1": later})


@pytest.mark.slow
def test_a_hub_model_at_a_named_revision_loads_offline_and_its_record_names_both(two_revisions, tmp_path):
    """--revision step1 of a hub id, from the cache with HF_HUB_OFFLINE=1: the snapshot of that branch is measured,
    its outputs go under <name>-step1, and the record names the revision asked for and the commit it resolved to; the
    other revision is another model (other weights), here measured with its weights in bfloat16 (--dtype, recorded);
    a revision the cache lacks gets one line naming it."""
    cache, commits = two_revisions
    corpus = tmp_path / "notes.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i % 11 : i % 11 + 8]) for i in range(60)) + "\n")
    common = ["--corpus", str(corpus), "--max-tokens", "150", "--k-lid", "5", "--sample-cap", "150", "--quiet"]
    sources = {}
    for revision, dtype in (("step0", "auto"), ("step1", "bfloat16")):  # step1's weights loaded in bfloat16 too
        args = ["layers", "--model", "isoflow-test/tiny-series", "--revision", revision, "--dtype", dtype, *common]
        p = isoflow(args, cache, tmp_path)
        assert p.returncode == 0, p.stderr
        meta = json.loads((tmp_path / f"results/layers/runs/tiny-series-{revision}/notes/meta.json").read_text())
        assert meta["model"] == f"tiny-series-{revision}" and meta["source"]["hub_id"] == "isoflow-test/tiny-series"
        assert meta["source"].get("dtype", "auto") == dtype
        assert (meta["source"]["revision_name"], meta["source"]["revision"]) == (revision, commits[revision])
        sources[revision] = meta["source"]["weights_sha256"]
    assert sources["step0"] != sources["step1"]
    p = isoflow(["layers", "--model", "isoflow-test/tiny-series", "--revision", "step9", *common], cache, tmp_path)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "'isoflow-test/tiny-series' at revision 'step9'" in lines[0]
    assert "`hf download isoflow-test/tiny-series --revision step9`" in lines[0]


def test_a_local_series_at_a_revision_is_its_checkpoint_folder(tmp_path, tiny_gpt2):
    """A pretraining run's folder with checkpoints/step<N>/ (isoflow pretrain --checkpoints), or a folder of step
    folders: --revision names the checkpoint, the outputs go under <folder's name>-<revision> (or --model-name), the
    record names the revision; a revision the series lacks, or a revision of a built-in model, is one line."""
    from isoflow.models.resolve import resolve_model
    from isoflow.models.spec import ModelSpec

    run = tmp_path / "plain-gpt2"
    for step in (0, 400):
        shutil.copytree(tiny_gpt2, run / "checkpoints" / f"step{step}")
    resolved = resolve_model(ModelSpec(str(run), revision="step400"), cache=tmp_path)
    assert resolved.name == "plain-gpt2-step400" and resolved.source["revision_name"] == "step400"
    assert resolved.source["path"].endswith("plain-gpt2/checkpoints/step400")
    assert resolve_model(ModelSpec(str(run / "checkpoints"), "mine", "step0"), cache=tmp_path).name == "mine"
    with pytest.raises(ValueError, match=r"no checkpoint 'step5' \(revisions there: step0, step400\)"):
        resolve_model(ModelSpec(str(run), revision="step5"), cache=tmp_path)
    with pytest.raises(ValueError, match="'minilm' is neither"):
        resolve_model(ModelSpec("minilm", revision="step5"), cache=tmp_path)
