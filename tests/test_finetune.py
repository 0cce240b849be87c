"""Fine-tuning with I-STAR: the encoder as sentence-transformers builds it, the held-out split (stratified, seeded,
disjoint), the canonical validation split, the shared penalty, padding masked out, records, bad input, the report."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import ROOT, sh

from isoflow import istar as istar_module
from isoflow.datasets import prepare, read_task
from isoflow.datasets.table import build_task, write_task
from isoflow.finetune import run_finetune
from isoflow.finetune import train as train_module
from isoflow.finetune.data import examples_of, held_out, stratified_split
from isoflow.finetune.model import SentenceEncoder, token_points
from isoflow.finetune.report import report
from isoflow.models import SENTENCE_MODELS
from isoflow.models.sbert import load_sentence_model


@pytest.fixture(scope="module")
def st_minilm(tmp_path_factory):
    return load_sentence_model(SENTENCE_MODELS["minilm"], "cpu", tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="module")
def polarity_small(tmp_path_factory, shared_mirror):
    """120 polarity sentences (60 per class) as a prepared task."""
    data = tmp_path_factory.mktemp("data")
    full = read_task(prepare("polarity", data_dir=data, mirror=shared_mirror, progress=False))
    texts, labels = full.items["text"].tolist(), full.examples["label"].tolist()
    write_task(build_task("polarity-120", texts[:60] + texts[-60:], labels[:60] + labels[-60:]), data / "tasks/polarity-120")
    return data


def test_encoder_matches_sentence_transformers(st_minilm):
    texts = ["A gripping, funny film.", "Dull.", "The plot never quite comes together, despite a strong cast and a fine score."]
    ours = SentenceEncoder(st_minilm).encode(texts, "cpu", batch_size=2)
    theirs = torch.as_tensor(st_minilm.encode(texts, convert_to_numpy=True))
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_token_points_leave_padding_out(st_minilm):
    enc = SentenceEncoder(st_minilm).eval()
    texts = ["short", "a much longer sentence with many more word pieces in it"]
    with torch.no_grad():
        _, states, mask = enc(enc.tokenize(texts, "cpu"), hidden_states=True)
        points = token_points(states, mask)
        alone = [token_points(*enc(enc.tokenize([t], "cpu"), hidden_states=True)[1:]) for t in texts]
    n_layers = len(states) - 1  # every layer but the embedding layer
    assert points.shape[0] == n_layers * int(mask.sum()) and int(mask.sum()) < mask.numel()  # padding was there, and left out
    # The same points as each sentence alone (no padding at all), layer by layer.
    per_layer = [torch.cat([a.reshape(n_layers, -1, 384)[k] for a in alone]) for k in range(n_layers)]
    assert torch.allclose(points, torch.cat(per_layer), atol=1e-4)


def test_stratified_split_is_seeded_disjoint_and_stratified():
    y = np.array([0] * 70 + [1] * 25 + [2] * 5)
    train, held = stratified_split(y, 0.2, seed=3)
    assert np.array_equal(np.sort(np.concatenate([train, held])), np.arange(100)) and not set(train) & set(held)
    assert [int((y[held] == c).sum()) for c in (0, 1, 2)] == [14, 5, 1]
    again, other = stratified_split(y, 0.2, seed=3), stratified_split(y, 0.2, seed=4)
    assert np.array_equal(again[1], held) and not np.array_equal(other[1], held)
    with pytest.raises(ValueError, match=r"held-out fraction must lie in \(0, 1\)"):
        stratified_split(y, 1.0, 0)


def test_validation_split_when_at_hand(tmp_path, shared_mirror):
    """MRPC's GLUE dev pairs can be built from the files at hand: they are the held-out data; SST-2's dev file is not
    in the mirror: a stratified split of the training data is held out instead, and said so."""
    mrpc = read_task(prepare("glue/mrpc", data_dir=tmp_path, mirror=shared_mirror, progress=False))
    train, dev, info = held_out(mrpc, "glue/mrpc", examples_of(mrpc), fraction=0.1, seed=0, data_dir=tmp_path, mirror=shared_mirror)
    assert info == {"source": "validation split", "file": "glue/MRPC/msr_paraphrase_train.txt", "n": 408}
    assert len(train) == 3668 and len(dev) == 408 and dev.pair and not set(zip(dev.a, dev.b)) & set(zip(train.a, train.b))
    wnli = read_task(prepare("glue/wnli", data_dir=tmp_path, mirror=shared_mirror, progress=False))
    train, dev, info = held_out(wnli, "glue/wnli", examples_of(wnli), fraction=0.1, seed=1, data_dir=tmp_path, mirror=shared_mirror)
    assert info["source"] == "stratified split of the training data" and len(train) + len(dev) == 635 and info["n"] == len(dev)


def test_the_penalty_is_the_table_experiments(polarity_small, tmp_path, monkeypatch):
    """One penalty for both experiments: fine-tuning calls the same IStar, on the batch's sentence embeddings."""
    assert train_module.IStar is istar_module.IStar
    seen = []
    original = istar_module.IStar.penalty

    def spy(self, points):
        value = original(self, points)
        seen.append((points.shape, self.lam, float(value.detach()), float(self.isoscore_star(points.detach()))))
        return value

    monkeypatch.setattr(istar_module.IStar, "penalty", spy)
    parquet, record = run_finetune("polarity-120", "minilm", 0, data_dir=polarity_small, results=tmp_path, device="cpu", progress=False,
                                   istar_lambda=3.0, batch_size=16, max_heldout=20)
    steps = pd.read_parquet(parquet.with_name("seed0.steps.parquet"))
    assert len(seen) == len(steps) == 7  # 100 training examples in batches of 16
    assert all(shape[1] == 384 and lam == 3.0 for shape, lam, _, _ in seen)
    for (_, lam, value, iso), recorded in zip(seen, steps["penalty"]):
        assert value == pytest.approx(lam * (1 - iso), abs=1e-6) and recorded == pytest.approx(value, abs=1e-6)


def test_records_epochs_and_settings(polarity_small, tmp_path):
    parquet, record = run_finetune("polarity-120", "minilm", 1, data_dir=polarity_small, results=tmp_path, device="cpu", progress=False,
                                   istar_lambda=-1.0, epochs=2, batch_size=16, heldout_fraction=0.2, lr=1e-4)
    assert parquet == tmp_path / "finetune/polarity-120/minilm/istar-1/seed1.parquet"
    epochs = pd.read_parquet(parquet)
    info = json.loads(record.read_text())
    assert list(epochs["epoch"]) == [0, 1, 2] and info["complete"] and not info.get("diverged")
    assert info["held_out"] == {"source": "stratified split of the training data", "fraction": 0.2, "seed": 1, "n": 24}
    assert info["n_train"] == 96 and info["settings"]["istar_lambda"] == -1.0 and info["settings"]["zeta"] == 0.2
    for col in ("accuracy", "metric", "loss", "isoscore", "isoscore_star", "silhouette", "twonn", "lid_mle", "cosine_anisotropy"):
        assert epochs[col].notna().all(), col
    assert info["train_sentences_per_second"] > 0 and info["eval_sentences_per_second"] > 0


def test_an_interrupted_run_leaves_no_record(polarity_small, tmp_path):
    def stop(epoch, step, loss):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_finetune("polarity-120", "minilm", 0, data_dir=polarity_small, results=tmp_path, device="cpu", progress=False, batch_size=16,
                     callback=stop)
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob("*.parquet"))


@pytest.mark.parametrize("kwargs, message", [
    (dict(model="bert"), "unknown model 'bert'"),
    (dict(model="glove-50d"), "glove-50d is a static word-vector model"),
    (dict(istar_lambda=float("nan")), "lambda must be a finite number"),
    (dict(zeta=2.0), r"zeta must be a number in \[0, 1\]"),
    (dict(lr=0.0), "lr must be a finite number > 0"),
    (dict(epochs=0), "epochs must be an integer >= 1"),
    (dict(heldout_fraction=0.0), r"heldout_fraction must be in \(0, 1\)"),
    (dict(istar_points="layers"), "istar_points must be one of pooled, tokens"),
    (dict(task="one-class"), "holds a single class"),
    (dict(task="imdb"), "unknown task 'imdb'"),
])
def test_bad_input_fails_before_training(polarity_small, tmp_path, kwargs, message):
    write_task(build_task("one-class", [f"s{i}" for i in range(30)], ["pos"] * 29 + ["neg"]), polarity_small / "tasks/one-class")
    args = {"task": "polarity-120", "model": "minilm", **kwargs}
    with pytest.raises(ValueError, match=message):
        run_finetune(args.pop("task"), args.pop("model"), 0, data_dir=polarity_small, results=tmp_path, device="cpu", progress=False, **args)
    assert not (tmp_path / "finetune").exists()


def test_report_table_and_figures(polarity_small, tmp_path):
    records = [run_finetune("polarity-120", "minilm", seed, data_dir=polarity_small, results=tmp_path, device="cpu", progress=False,
                            istar_lambda=lam, batch_size=32, max_heldout=20)[1] for lam in (-5.0, 5.0) for seed in (0, 1)]
    written = report(records, tmp_path / "tables", tmp_path / "figures")
    table = pd.read_csv(tmp_path / "tables/finetune.csv")
    assert list(table["lambda"]) == [-5.0, 5.0] and set(table["seeds"]) == {2} and set(table["metric_name"]) == {"accuracy"}
    last = pd.concat(pd.read_parquet(r.with_suffix(".parquet")).tail(1) for r in records[:2])
    assert table.loc[0, "isoscore_star_mean"] == pytest.approx(last["isoscore_star"].mean(), abs=1e-12)
    assert {p.name for p in written} >= {"finetune_performance.png", "finetune_twonn.pdf", "finetune_silhouette_vs_isoscore.png"}


# ----- the workflow section ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("section, named", [
    ("{'tasks': ['glue/sst2'], 'models': ['minilm'], 'lambdas': [0, 1], 'seeds': [0], 'zeta': 2}", "zeta"),
    ("{'tasks': ['supersense'], 'models': ['minilm'], 'lambdas': [0], 'seeds': [0]}", "supersense"),
    ("{'tasks': ['glue/sst2'], 'models': ['minilm'], 'lambdas': [0], 'seeds': [0], 'epoch': 1}", "epoch"),
    ("{'tasks': ['glue/sst2'], 'models': ['minilm'], 'lambdas': ['x'], 'seeds': [0]}", "lambdas"),
])
def test_workflow_finetune_section_is_schema_checked(tmp_path, section, named):
    """A finetune section with a value out of range, a word task, a misspelt key or a weight that is not a number is
    refused before anything is planned, naming it. (`--config` merges into the file's section, so a key missing
    there is inherited; the schema's `required` covers config files.)"""
    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    bad = sh(["snakemake", "-n", "finetune", *where, f"finetune={section}"], ROOT, check=False)
    assert bad.returncode != 0 and "ValidationError" in bad.stdout + bad.stderr and named in bad.stdout + bad.stderr
    good = sh(["snakemake", "-n", "finetune", *where, "finetune={'tasks': ['glue/sst2'], 'models': ['minilm'], "
               "'lambdas': [-1, 0, 1], 'seeds': [0, 1], 'zeta': 0.5}"], ROOT).stdout
    assert re.search(r"^finetune_run\s+6$", good, re.M)
