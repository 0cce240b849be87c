"""The workflow as safe and as clear as the command line, tried as a user would with their own files (a CSV, vectors
made elsewhere, a model folder, text files) through Snakemake: a failed job's isoflow error line on the terminal and
its previous outputs kept (sha256 before and after) and re-tried on the next run; config mistakes in one line each; a
declared file that is gone named on every run; the config's names kept in every output; built-in names reserved;
silent garbage warned about; `make report` and `make pull` saying what they do."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import MAKE, ONE_THREAD_PER_JOB, ROOT, built_once, checkout_copy, job_counts, sh

from isoflow.cli import main

CONFIG = {
    "data_dir": "data/mine",
    "raw_dir": "data/raw",
    "results_dir": "results/mine",
    "mirror": None,
    "device": "cpu",
    "optimize": {
        "seeds": [0],
        "steps": {"default": 5, "glue": 5},
        "pairs": [{"task": "reviews", "model": "bag-of-words"}],
    },
    "own": {
        "tasks": {"reviews": {"file": "mine/reviews.csv", "text": "sentence", "label": "sentiment"}},
        "models": {"bag-of-words": {"embeddings": {"reviews": "mine/reviews.npy"}}},
    },
}


def write_config(repo, changes: dict | None = None, name: str = "config.yaml") -> str:
    config = json.loads(json.dumps(CONFIG))
    for dotted, value in (changes or {}).items():
        *parents, key = dotted.split(".")
        node = config
        for p in parents:
            node = node[p]
        node[key] = value
    (repo / "mine" / name).write_text(yaml.safe_dump(config))
    return f"mine/{name}"


def with_own_files(repo):
    """``repo`` given a user's own CSV and vectors (one row per sentence) beside a config that uses them."""
    (repo / "mine").mkdir()
    (repo / "mine/reviews.csv").write_bytes((ROOT / "examples/own/reviews.csv").read_bytes())
    n = len(pd.read_csv(repo / "mine/reviews.csv"))
    np.save(repo / "mine/reviews.npy", np.random.default_rng(0).normal(size=(n, 16)).astype("float32"))
    write_config(repo)
    return repo


@pytest.fixture
def mine(tmp_path):
    """A checkout with a user's own files and config, nothing run yet."""
    return with_own_files(checkout_copy(tmp_path / "isoflow"))


def snakemake(repo, *args, config="mine/config.yaml", check=True):
    command = ["snakemake", "--cores", "2", *ONE_THREAD_PER_JOB, *args, "--configfile", config]
    return sh(command, repo, check=check, timeout=900)


@pytest.fixture(scope="session")
def mine_built(tmp_path_factory):
    """`mine` after one whole run of its config, built once (tests/conftest.py: WORKFLOW_GROUPS) for the tests that
    start from a finished run; each changes a copy of it (`mine_ran`)."""
    built_once(tmp_path_factory, "mine-workflow")
    repo = with_own_files(checkout_copy(tmp_path_factory.mktemp("mine") / "isoflow"))
    snakemake(repo)
    return repo


@pytest.fixture
def mine_ran(mine_built, tmp_path):
    """A copy of `mine_built`, as up to date as it (file times and Snakemake's records kept)."""
    return checkout_copy(tmp_path / "isoflow", mine_built)


def sha256s(repo, folder: str) -> dict[str, str]:
    return {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((repo / folder).rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_a_failed_rerun_keeps_every_good_output_says_why_and_is_tried_again(mine_ran):
    """A job that fails on a rerun says why in one line and leaves every output made before as it was; the next run
    tries it again. Over 60 s on the slower 2-core machines: the first test to ask for `mine_built` pays for its one
    whole run, then this test reruns it twice."""
    before = {**sha256s(mine_ran, "data/mine"), **sha256s(mine_ran, "results/mine")}
    csv = mine_ran / "mine/reviews.csv"
    good = csv.read_bytes()
    csv.write_bytes(good.replace(b"sentiment", b"sentimnt", 1))  # a column typo in the header
    failed = snakemake(mine_ran, check=False)
    assert failed.returncode != 0
    said = (failed.stdout + failed.stderr).splitlines()
    line = "prepare failed (logs/prepare/reviews.log): isoflow prepare: error: mine/reviews.csv: no column 'sentiment'"
    assert any(s.startswith(line) for s in said[-6:]), said[-6:]  # where the user looks: at the end
    after = {**sha256s(mine_ran, "data/mine"), **sha256s(mine_ran, "results/mine")}
    assert {k: v for k, v in after.items() if k in before} == before and set(before) <= set(after)
    # no stale success: the next run tries the failed job again (and everything after it), rather than nothing
    jobs = job_counts(snakemake(mine_ran, "-n", "--quiet", "rules").stdout)
    assert jobs["prepare"] == 1 and jobs["optimize_run"] == 1
    csv.write_bytes(good)
    snakemake(mine_ran)
    assert sha256s(mine_ran, "data/mine/tasks") == {k: v for k, v in before.items() if k.startswith("data/mine/tasks")}


@pytest.mark.slow
def test_config_mistakes_are_one_line_each_naming_the_file_and_field(mine):
    typo = write_config(
        mine, {"own.tasks.reviews": {"file": "mine/reviews.csv", "text": "sentence", "lable": "sentiment"}}, "typo.yaml"
    )
    p = snakemake(mine, "-n", config=typo, check=False)
    lines = [line for line in (p.stdout + p.stderr).splitlines() if line.strip()]
    assert p.returncode != 0 and lines == [
        "mine/typo.yaml: own.tasks.reviews: missing key 'label' (required: file, text, label)",
        "mine/typo.yaml: own.tasks.reviews: 'lable' is not a key here; allowed: file, label, label_sep, text, text_b",
    ]
    wrong = write_config(mine, {"optimize.seeds": [0, -1], "device": "gpu"}, "wrong.yaml")
    lines = [line for line in (snakemake(mine, "-n", config=wrong, check=False).stderr).splitlines() if line.strip()]
    assert lines == [
        "mine/wrong.yaml: device: 'gpu' does not match '^(auto|cpu|cuda(:[0-9]+)?)$'",
        "mine/wrong.yaml: optimize.seeds[1]: -1 is less than the minimum of 0",
    ]


@pytest.mark.slow
def test_a_declared_file_that_is_gone_is_named_on_every_run(mine_ran):
    results = sha256s(mine_ran, "results/mine")
    (mine_ran / "mine/reviews.npy").unlink()
    for _ in range(2):  # not only the first time: the old results must not pass for current ones
        p = snakemake(mine_ran, check=False)
        assert p.returncode != 0 and p.stderr.strip() == (
            "mine/config.yaml: own.models.bag-of-words.embeddings.reviews: mine/reviews.npy does not exist; fix the "
            f"path (relative to {mine_ran})"
        )
    assert sha256s(mine_ran, "results/mine") == results


@pytest.mark.slow
def test_corpora_are_named_by_the_config_even_when_their_files_share_a_name(mine, shared_mirror):
    for folder, words in (("a", "the cat sat on the mat ."), ("b", "a dog slept by the warm fire .")):
        (mine / "mine" / folder).mkdir()
        (mine / "mine" / folder / "notes.txt").write_text("\n".join(f"{words} {i} ." for i in range(40)) + "\n")
    config = write_config(
        mine,
        {
            "optimize.pairs": [],
            "mirror": str(shared_mirror),
            "own.corpora": {"notes-a": "mine/a/notes.txt", "notes-b": "mine/b/notes.txt"},
            "layers": {
                "models": [],
                "static": ["glove-50d"],
                "corpora": ["notes-a", "notes-b"],
                "k_lid": 5,
                "k_max": 3,
            },
        },
        "corpora.yaml",
    )
    snakemake(mine, "layers", config=config)
    runs = mine / "results/mine/layers/runs/glove-50d"
    for name in ("notes-a", "notes-b"):
        assert set(pd.read_parquet(runs / name / "layers.parquet")["corpus"]) == {name}
        assert json.loads((runs / name / "meta.json").read_text())["corpus"] == name
    table = pd.read_csv(mine / "results/mine/layers/tables/layers.csv")
    assert sorted(set(table["corpus"])) == ["notes-a", "notes-b"]


def prepare_small_task(data_dir, rows: str = "a good film {i},pos\na bad film {i},neg\n") -> None:
    """An own task ``r`` of 10 texts, prepared under ``data_dir``."""
    (data_dir / "r.csv").write_text("text,label\n" + "".join(rows.format(i=i) for i in range(5)))
    argv = ["prepare", "r", "--from-file", str(data_dir / "r.csv"), "--text", "text", "--label", "label"]
    assert main([*argv, "--data-dir", str(data_dir), "--quiet"]) == 0


def test_built_in_model_names_are_reserved_on_the_command_line(tmp_path, tiny_bert, capsys):
    prepare_small_task(tmp_path)
    np.save(tmp_path / "v.npy", np.ones((10, 4), dtype=np.float32) + np.arange(10)[:, None])
    cases = [
        (
            ["import-embeddings", str(tmp_path / "v.npy"), "--task", "r", "--model", "minilm"],
            "model name 'minilm' is a built-in",
        ),
        (
            ["import-embeddings", str(tmp_path / "v.npy"), "--task", "r", "--model", "glove-50d"],
            "model name 'glove-50d' is a built-in",
        ),
        (
            ["encode", "--model", str(tiny_bert), "--model-name", "mpnet", "--task", "r"],
            "model name 'mpnet' is a built-in",
        ),
    ]
    for argv, message in cases:
        assert main([*argv, "--data-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert message in err and "give another name with" in err, err
    assert not (tmp_path / "embeddings").exists()


def test_a_cache_of_another_source_is_never_taken_for_a_models_own(tmp_path, capsys):
    """A table under a built-in model's name that this model did not make (imported, or from an older isoflow) is
    encoded again, not reused."""
    prepare_small_task(tmp_path)
    from isoflow.embed import import_embeddings, load_embeddings

    np.save(tmp_path / "v.npy", np.random.default_rng(0).normal(size=(10, 16)).astype(np.float32))
    out = import_embeddings(tmp_path / "v.npy", "r", "stand-in", data_dir=tmp_path)
    planted = tmp_path / "embeddings/minilm/r"
    planted.parent.mkdir(parents=True)
    out.rename(planted)
    meta = json.loads((planted / "meta.json").read_text())
    (planted / "meta.json").write_text(json.dumps({**meta, "model": "minilm"}))
    assert main(["encode", "--model", "minilm", "--task", "r", "--data-dir", str(tmp_path), "--quiet"]) == 0
    emb, meta = load_embeddings(planted)
    assert emb.shape[1] == 384 and meta["model"] == "minilm" and "path" not in meta["source"]


def test_silent_garbage_is_warned_about_or_refused(tmp_path, capsys):
    """A tokenizer that knows none of the words gives one vector for every text: a warning names the share of unknown
    word pieces and the repeated rows, and the optimisation refuses a table whose rows are all identical."""
    sys.path.insert(0, str(ROOT / "examples"))
    from _tiny_model import tiny_bert

    folder = tiny_bert(tmp_path / "blind", words=["zebra", "quark"])  # knows none of the texts' words
    prepare_small_task(tmp_path, "nice movie {i},pos\nawful movie {i},neg\n")
    capsys.readouterr()
    assert main(["encode", "--model", str(folder), "--task", "r", "--data-dir", str(tmp_path), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "isoflow encode: warning:" in err and "of the word pieces to its unknown token [UNK]" in err, err
    assert "9 of its 10 rows repeat another row exactly (1 distinct vectors for 10 distinct texts)" in err, err
    assert (
        main(
            [
                "optimize",
                "--task",
                "r",
                "--model",
                "blind",
                "--steps",
                "2",
                "--data-dir",
                str(tmp_path),
                "--results",
                str(tmp_path / "results"),
                "--device",
                "cpu",
                "--quiet",
            ]
        )
        == 2
    )
    assert "r: all 10 rows of the embedding table are identical" in capsys.readouterr().err


@pytest.mark.slow
def test_silent_garbage_in_the_workflow_is_named_on_the_terminal(mine):
    """A model folder whose tokenizer knows none of the words: the run succeeds, and its end names the warnings the
    encode job wrote into its log (unknown word pieces, repeated rows)."""
    sys.path.insert(0, str(ROOT / "examples"))
    from _tiny_model import tiny_bert

    tiny_bert(mine / "mine/blind", words=["zebra", "quark"])
    config = write_config(
        mine,
        {"own.models": {"blind": {"path": "mine/blind"}}, "optimize.pairs": [{"task": "reviews", "model": "blind"}]},
        "blind.yaml",
    )
    p = snakemake(mine, config=config)
    tail = p.stderr[p.stderr.index("Warnings from this run's jobs:") :].splitlines()
    assert any(
        line.startswith("logs/encode/blind/reviews.log: isoflow encode: warning: ") and "its tokenizer maps" in line
        for line in tail
    ), tail
    assert any("rows repeat another row exactly" in line for line in tail), tail


@pytest.mark.slow
def test_make_report_reports_the_config_that_last_ran(mine_ran):
    assert (
        sh([*MAKE, "-n", "report"], mine_ran)
        .stdout.strip()
        .endswith("--configfile mine/config.yaml --report results/mine/report.html")
    )


def test_make_pull_on_a_fresh_clone_says_nothing_is_shared_yet(tmp_path):
    clone = checkout_copy(tmp_path / "isoflow")
    p = sh([*MAKE, "pull"], clone)
    assert (p.stdout + p.stderr).strip() == (
        "make pull: nothing has been shared through DVC for this commit yet (no dvc.lock); make the results (`dvc "
        "repro`, or `make run`), then share them: `dvc push`, `git add dvc.lock`, commit and push"
    )
