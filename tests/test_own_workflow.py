"""Your own data, model folder, vectors and corpus through the workflow: examples/own/config.yaml as shipped (a CSV,
a tiny BERT built by examples/own/make_inputs.py, hashed bags of words, a text file), end to end; the files are
declared inputs (editing one re-runs exactly what read it); a config naming what it does not declare is refused in
one line."""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import MAKE, ONE_THREAD_PER_JOB, ROOT, built_once, checkout_copy, config_refusals, job_counts, sh

CONFIG = "examples/own/config.yaml"


def snakemake(*args, cwd, check=True):
    return sh(["snakemake", *ONE_THREAD_PER_JOB, *args, "--configfile", CONFIG], cwd, check=check, timeout=1800)


def planned(repo) -> dict[str, int]:
    """The jobs a dry run plans, by rule."""
    jobs = job_counts(snakemake("-n", "--quiet", "rules", cwd=repo).stdout)
    jobs.pop("total", None)
    return jobs


@pytest.fixture(scope="module")
def own_checkout(tmp_path_factory):
    """A checkout in which `make example-own` has run (its two commands, as the Makefile gives them)."""
    built_once(tmp_path_factory, "own-workflow")
    repo = checkout_copy(tmp_path_factory.mktemp("own") / "isoflow")
    sh([sys.executable, "examples/own/make_inputs.py", "data/own-example"], repo)
    snakemake("--cores", "2", cwd=repo)
    return repo


@pytest.mark.slow
def test_the_example_runs_every_section_on_own_inputs(own_checkout):
    """examples/own's workflow on its own inputs (a CSV task, a tiny BERT folder, hashed bags of words, a text corpus):
    every section's records name them, relative to the repository. Over 60 s on 2 cores: the first test of the file to
    ask for `own_checkout` pays for building that workflow end to end, which the file's tests then share."""
    results, data = own_checkout / "results/own-example", own_checkout / "data/own-example"
    task = json.loads((data / "tasks/reviews/meta.json").read_text())
    assert task["n_examples"] == 120 and task["label_names"] == ["negative", "positive"]
    assert task["sources"][0]["path"] == "examples/own/reviews.csv"  # relative to the repository: the same everywhere
    encoded = json.loads((data / "embeddings/tiny-bert/reviews/meta.json").read_text())
    assert encoded["model"] == "tiny-bert" and encoded["source"]["path"] == "data/own-example/models/tiny-bert"
    assert list(encoded["source"]["weights_sha256"]) == ["model.safetensors"]
    imported = json.loads((data / "embeddings/bag-of-words/reviews/meta.json").read_text())
    assert imported["source"]["path"] == "data/own-example/vectors/reviews.npy" and imported["dim"] == 32

    correlations = pd.read_csv(results / "optimize/tables/correlations.csv")
    assert sorted(zip(correlations["task"], correlations["model"])) == [
        ("reviews", "bag-of-words"),
        ("reviews", "tiny-bert"),
    ]
    assert (correlations["seeds"] == 2).all() and (correlations["setup"].str.startswith("not in the paper")).all()
    istar = pd.read_csv(results / "istar/tables/istar.csv")
    assert sorted(istar.istar_lambda) == [-1.0, 0.0, 1.0] and set(istar["task"]) == {"reviews"}
    layers = json.loads((results / "layers/runs/tiny-bert/notes/meta.json").read_text())
    assert layers["n_layers"] == 3 and layers["model"] == "tiny-bert"  # the embeddings and 2 transformer layers
    assert sorted(pd.read_csv(results / "layers/tables/layers.csv")["model"].unique()) == [
        "plain-notes-bert",
        "plain-notes-gpt2",
        "tiny-bert",
        "tiny-llama",
    ]
    gguf = json.loads((results / "layers/runs/tiny-llama/notes/meta.json").read_text())["source"]["gguf"]
    assert gguf["file"] == "tiny-llama.gguf" and gguf["quantisation"] == "MOSTLY_Q8_0"
    corpus = json.loads((data / "pretrain/corpus/corpus.json").read_text())
    assert corpus["excluded_tasks"]["data/own-example/tasks/reviews"] == {"texts": 120, "splits": ["prepared"]}
    assert corpus["sources"]["examples/own/corpus.txt"]["read"]["documents"] == 80  # one document per line
    pretrained = pd.read_csv(results / "pretrain/tables/pretrain.csv").set_index("model")
    assert pretrained.loc["plain-notes-bert", "architecture"] == "BertForMaskedLM"
    assert pretrained.loc["plain-notes-gpt2", "architecture"] == "GPT2LMHeadModel"
    assert (pretrained["steps"] == 20).all() and (pretrained["unigram_perplexity"] > 1).all()
    plain = json.loads((results / "layers/runs/plain-notes-gpt2/notes/meta.json").read_text())
    assert plain["n_layers"] == 3 and plain["model"] == "plain-notes-gpt2"
    finetune = pd.read_csv(results / "finetune/tables/finetune.csv")
    assert sorted(zip(finetune["reg"], finetune.istar_lambda)) == [
        ("cosreg", 0.0),
        ("istar", -1.0),
        ("istar", 0.0),
        ("istar", 1.0),
    ]
    run = json.loads((results / "finetune/runs/reviews/tiny-bert/istar-1/seed0.json").read_text())
    assert run["held_out"]["source"].startswith("fixed") and run["n_heldout"] == 24
    assert (run["n_train"], run["n_validation"]) == (86, 10)  # a tenth of the other 96 kept for model selection
    for section, name in (
        ("optimize", "silhouette_vs_isoscore"),
        ("istar", "istar_performance"),
        ("layers", "layers_isoscore"),
        ("finetune", "finetune_baselines"),
    ):
        assert (results / section / f"figures/{name}.png").stat().st_size > 10_000
    assert (results / "pretrain/figures/pretrain_curves.png").stat().st_size > 10_000


@pytest.mark.slow
def test_the_html_report_holds_the_own_tables_and_figures(own_checkout, tmp_path):
    report = tmp_path / "report.html"
    snakemake("--report", str(report), cwd=own_checkout)
    html = report.read_text()
    results = own_checkout / "results/own-example"
    for f in sorted(results.glob("*/figures/*.png")) + sorted(results.glob("*/tables/*.csv")):
        assert f.name in html, f"{f.name} is not in the report"


@pytest.mark.slow
def test_own_files_are_declared_inputs(own_checkout, tmp_path):
    """Editing a file re-runs exactly the jobs that read it (Snakemake compares contents: a touch re-runs nothing)."""
    repo = tmp_path / "isoflow"
    shutil.copytree(own_checkout, repo, symlinks=True)  # keeps mtimes and .snakemake metadata
    assert "Nothing to be done" in snakemake("-n", cwd=repo).stdout

    def append(rel, data: bytes):
        with open(repo / rel, "ab") as fh:
            fh.write(data)

    append("examples/own/corpus.txt", b"i think the cast was warm .\n")
    # the corpus is both the layer analysis' and the pretraining's: the plain models are trained again, and all four
    # models analysed again
    assert planned(repo) == {
        "layers_run": 4,
        "layers_report": 1,
        "pretrain_corpus": 1,
        "pretrain_model": 2,
        "pretrain_report": 1,
        "all": 1,
    }
    vectors = repo / "data/own-example/vectors/reviews.npy"
    np.save(vectors, np.load(vectors) + 1.0)
    jobs = planned(repo)
    assert (
        jobs["import_embeddings"] == 1
        and jobs["optimize_run"] == 1
        and "encode" not in jobs
        and "finetune_run" not in jobs
    )
    append("examples/own/reviews.csv", b"121,the plot was warm .,positive\n")
    jobs = planned(repo)
    assert jobs["prepare"] == 1 and jobs["encode"] == 1 and jobs["finetune_run"] == 4 and jobs["istar_run"] == 2


def _config(tmp_path, changes: dict) -> str:
    """The example's config with some entries replaced (keys: dotted paths)."""
    config = yaml.safe_load((ROOT / CONFIG).read_text())
    for dotted, value in changes.items():
        *parents, key = dotted.split(".")
        node = config
        for p in parents:
            node = node[p]
        node[key] = value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"optimize.pairs": [{"task": "my-reviews", "model": "tiny-bert"}]},
            "optimize.pairs[].task names 'my-reviews', which is neither a built-in task nor declared under own",
        ),
        (
            {"own.tasks.polarity": {"file": "x.csv", "text": "t", "label": "l"}},
            "own.tasks.polarity is the name of a built-in one; rename it (e.g. my-polarity)",
        ),
        (
            {"finetune.models": ["bag-of-words"]},
            "finetune.models names 'bag-of-words', vectors made elsewhere (no encoder to run)",
        ),
        (
            {"istar.tasks": ["reviews", "polarity"], "istar.models": ["bag-of-words"]},
            "own.models.bag-of-words.embeddings has no file for task 'polarity'",
        ),
        (
            {"own.models.bag-of-words.dtype": "bfloat16"},
            "own.models.bag-of-words.dtype: bfloat16 names how a model's weights load, and vectors made elsewhere have "
            "none; remove it",
        ),
        (
            {"own.models.bag-of-words.layers": "::2"},
            "own.models.bag-of-words.layers: ::2 names which of a model's states to measure, and vectors made "
            "elsewhere have none; remove it",
        ),
        (
            {"own.models.bag-of-words.device_map": "auto"},
            "own.models.bag-of-words.device_map: auto names how a model's weights are spread over devices, and vectors "
            "made elsewhere have none; remove it",
        ),
        (
            {"own.models.tiny-bert.layers": "0,last"},
            "own.models.tiny-bert.layers: '0,last': 'last' is neither a layer's index nor a slice; give e.g. 0,6,12 "
            "or ::4,-1 (every fourth and the last)",
        ),
        (
            {"layers.corpora": ["diary"]},
            "layers.corpora names 'diary', which is neither a built-in corpus nor declared under own",
        ),
        (
            {"pretrain.corpus.exclude_tasks": ["diary"]},
            "pretrain.corpus.exclude_tasks names 'diary', which is neither a built-in sentence task nor "
            "declared under own",
        ),
        (
            {"pretrain.models.minilm": {"objective": "masked"}},
            "pretrain.models.minilm has the name of a built-in model",
        ),
    ],
)
def test_a_config_naming_what_it_does_not_declare_is_refused(tmp_path, changes, message):
    problems = config_refusals(configfile=_config(tmp_path, changes))
    assert any(line.startswith(message) for line in problems), problems


def test_a_model_folder_not_there_is_named(tmp_path):
    config = _config(
        tmp_path,
        {
            "own.models.mine": {"path": str(tmp_path / "nowhere")},
            "layers.models": ["mine"],
            "data_dir": str(tmp_path / "data"),
            "results_dir": str(tmp_path / "results"),
        },
    )
    line = f"own.models.mine.path: {tmp_path / 'nowhere'} does not exist; fix the path (relative to {ROOT})"
    assert line in config_refusals(configfile=config)


def test_make_example_own_runs_what_the_tests_run():
    """`make example-own` is the fixture's two commands (the tests run them without the install step)."""
    lines = sh([*MAKE, "-n", "example-own"], ROOT).stdout.splitlines()
    assert any(line.endswith("examples/own/make_inputs.py data/own-example") for line in lines)
    assert "snakemake --cores 2 --configfile examples/own/config.yaml" in lines


@pytest.mark.slow
def test_a_sweep_resumed_from_saved_runs_runs_only_the_missing_ones(own_checkout, tmp_path, monkeypatch):
    """`make save-partial-X` here, then `make resume-X` on another machine (scripts/partial_runs.py): with the runs'
    inputs built there and nothing recorded of the runs, the saved runs put back are taken as done; only the unsaved
    run runs."""
    from isoflow.publishing import partial as partial_runs
    from isoflow.sections import PUBLICATIONS, Publication

    monkeypatch.setitem(PUBLICATIONS, "own-finetune", Publication("own-finetune", "finetune", CONFIG))
    repo = tmp_path / "isoflow"
    shutil.copytree(own_checkout, repo, symlinks=True)
    runs = repo / "results/own-example/finetune/runs"
    partial_runs.save("own-finetune", repo)
    unfinished = "partial-results/own-finetune/finetune/runs/reviews/tiny-bert/istar1"  # a run not finished there
    shutil.rmtree(repo / unfinished)
    shutil.rmtree(runs)
    shutil.rmtree(repo / ".snakemake")  # another machine: no record of the runs
    # The first step of a resume builds the runs' inputs and none of the runs.
    omitted = snakemake("finetune", "-n", "--quiet", "rules", "--omit-from", "finetune_run", cwd=repo).stdout
    assert "finetune_run" not in job_counts(omitted)
    assert partial_runs.restore("own-finetune", repo) == 3 * 3 + 1  # three runs of three files, the baseline
    jobs = job_counts(snakemake("finetune", "-n", "--quiet", "rules", cwd=repo).stdout)
    assert (jobs["finetune_run"], jobs["finetune_report"]) == (1, 1)


@pytest.mark.slow
def test_a_resumed_sweep_does_not_pretrain_again_the_models_saved_with_its_runs(own_checkout, tmp_path, monkeypatch):
    """The layer analysis of the two plain models, saved in parts: the models travel with the runs; on the next
    machine they are put back after their corpus is built, and the workflow neither trains them nor analyses them
    again."""
    from isoflow.publishing import partial as partial_runs
    from isoflow.sections import PUBLICATIONS, Publication

    monkeypatch.setitem(PUBLICATIONS, "own-layers", Publication("own-layers", "layers", CONFIG))
    repo = tmp_path / "isoflow"
    shutil.copytree(own_checkout, repo, symlinks=True)
    saved = partial_runs.save("own-layers", repo)
    assert json.loads((saved / "PARTIAL.json").read_text())["inputs"] == [
        "data/own-example/pretrained/plain-notes-bert",
        "data/own-example/pretrained/plain-notes-gpt2",
    ]
    # Another machine: no models, no results, no record of either; the corpus is built again (kept here, as it was).
    shutil.rmtree(repo / "data/own-example/pretrained")
    shutil.rmtree(repo / "results/own-example")
    shutil.rmtree(repo / ".snakemake")
    first = job_counts(
        snakemake("layers", "-n", "--quiet", "rules", "--omit-from", "pretrain_model", "layers_run", cwd=repo).stdout
    )
    assert "pretrain_model" not in first and "layers_run" not in first
    assert [p.name for p in partial_runs.restore_inputs("own-layers", repo)] == ["plain-notes-bert", "plain-notes-gpt2"]
    assert partial_runs.restore("own-layers", repo) > 0
    jobs = job_counts(snakemake("layers", "-n", "--quiet", "rules", cwd=repo).stdout)
    assert "pretrain_model" not in jobs and "layers_run" not in jobs
