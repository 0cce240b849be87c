"""Fine-tuning with I-STAR as Rudman & Eickhoff run it: the encoder's pooled output as sentence-transformers computes
it, token points without padding, a held-out set fixed across runs (SST-2: whole sentences, their phrases dropped from
training), zero weights as the plain run bit for bit, Σ_S re-estimated every epoch from the current model, records,
bad input, the report. The training loop runs on a tiny random BERT (a local folder; the loop does not depend on the
model, and MiniLM would take ten times longer); MiniLM where its own numbers are checked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import ROOT, assert_one_record_schema, config_refusals, job_counts, placed_where_planned, sh

from isoflow.datasets import prepare, read_task
from isoflow.datasets.table import build_task, write_task
from isoflow.finetune import FinetuneSettings, run_finetune
from isoflow.finetune import train as train_module
from isoflow.finetune.data import examples_of, held_out, maximal_phrases, phrase_disjoint_split, stratified_split
from isoflow.finetune.model import SentenceEncoder, penalty_points
from isoflow.finetune.report import paired, report
from isoflow.finetune.runs import LrRun
from isoflow.istar import IStarLoss
from isoflow.metrics import covariance
from isoflow.models import SENTENCE_MODELS
from isoflow.models.sbert import load_sentence_model

# A run small enough for a test: 60 training and 20 held-out texts, one epoch.
SMALL_RUN = dict(
    epochs=1,
    batch_size=50,
    max_heldout=20,
    shrinkage_points=1000,
    max_train=60,
)


def polarity_run(data_dir, results, model, seed=0, **settings):
    """``run_finetune`` on the 120-sentence polarity task, on the CPU, quietly: what every run of these tests shares."""
    return run_finetune(
        "polarity-120", str(model), seed, data_dir=data_dir, results=results, device="cpu", progress=False, **settings
    )


@pytest.fixture(scope="module")
def st_minilm(tmp_path_factory):
    return load_sentence_model(SENTENCE_MODELS["minilm"], "cpu", tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="module")
def polarity_small(tmp_path_factory, shared_mirror):
    """120 polarity sentences (60 per class) as a prepared task."""
    data = tmp_path_factory.mktemp("data")
    full = read_task(prepare("polarity", data_dir=data, mirror=shared_mirror, progress=False))
    texts, labels = full.items["text"].tolist(), full.examples["label"].tolist()
    write_task(
        build_task("polarity-120", texts[:60] + texts[-60:], labels[:60] + labels[-60:]), data / "tasks/polarity-120"
    )
    return data


def test_pooled_output_is_what_sentence_transformers_computes(st_minilm):
    texts = [
        "A gripping, funny film.",
        "Dull.",
        "The plot never quite comes together, despite a strong cast and a fine score.",
    ]
    enc = SentenceEncoder.from_sentence_transformer(st_minilm).eval()
    with torch.no_grad():
        pooled = enc(enc.tokenize(texts, None, "cpu"))[0]
    theirs = torch.as_tensor(st_minilm.encode(texts, convert_to_numpy=True))  # its pipeline ends with Normalize
    assert torch.allclose(torch.nn.functional.normalize(pooled, dim=1), theirs, atol=1e-5)
    assert not torch.allclose(pooled.norm(dim=1), torch.ones(3), atol=1e-2)  # the head sees the unnormalised output


def test_token_points_leave_padding_out(st_minilm):
    enc = SentenceEncoder.from_sentence_transformer(st_minilm).eval()
    texts = ["short", "a much longer sentence with many more word pieces in it"]
    with torch.no_grad():
        pooled, states, mask = enc(enc.tokenize(texts, None, "cpu"), hidden_states=True)
        points = penalty_points("tokens-all-layers", pooled, states, mask)
        alone = [
            penalty_points("tokens-all-layers", *enc(enc.tokenize([t], None, "cpu"), hidden_states=True)) for t in texts
        ]
        last = penalty_points("tokens-last-layer", pooled, states, mask)
    n_layers = len(states) - 1  # every layer but the embedding layer
    assert (
        points.shape[0] == n_layers * int(mask.sum()) and int(mask.sum()) < mask.numel()
    )  # padding was there, and left out
    # The same points as each sentence alone (no padding at all), layer by layer.
    per_layer = [torch.cat([a.reshape(n_layers, -1, 384)[k] for a in alone]) for k in range(n_layers)]
    assert torch.allclose(points, torch.cat(per_layer), atol=1e-4)
    assert torch.allclose(last, per_layer[-1], atol=1e-4) and penalty_points("pooled", pooled, states, mask) is pooled


def test_layer_geometry_is_every_layers_held_out_tokens(tiny_bert):
    """Evaluation's per-layer measurements read every layer's token states of the held-out texts, padding and special
    tokens left out, the first sample_cap of them, from its own forward pass (one encoder call per batch, whichever
    points the penalty takes): checked against states gathered one sentence at a time by transformers itself."""
    from IsoScore.IsoScore import IsoScore
    from transformers import AutoModel, AutoTokenizer

    from isoflow.finetune.data import Examples
    from isoflow.finetune.model import ClassificationHead
    from isoflow.finetune.train import evaluate
    from isoflow.metrics import s_inter, twonn

    words = "the film was very good i hated plot a long and dull story about cast it fine not funny".split()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 9)))) for _ in range(40)]
    ex = Examples(texts, None, np.zeros(len(texts), dtype=int), ["x"])
    model, tokenizer = AutoModel.from_pretrained(tiny_bert).eval(), AutoTokenizer.from_pretrained(tiny_bert)
    enc = SentenceEncoder.from_transformer(model, tokenizer).eval()  # dropout off before and after the measurement
    layers, ids = [[] for _ in range(3)], []
    with torch.no_grad():
        for text in texts:  # one sentence at a time: no padding at all
            inputs = tokenizer(text, return_tensors="pt")
            states = model(**inputs, output_hidden_states=True).hidden_states
            for k, h in enumerate(states):
                layers[k].append(h[0, 1:-1])  # [CLS] and [SEP] left out
            ids.append(inputs["input_ids"][0, 1:-1])
    types = torch.cat(ids)[:150]
    head = ClassificationHead(32, 2)
    for points in ("pooled", "tokens-all-layers"):
        s = FinetuneSettings(
            task="t", model="m", seed=0, sample_cap=150, eval_batch_size=7, layer_geometry=True, points=points
        )
        calls = []
        hook = enc.register_forward_hook(lambda *_, calls=calls: calls.append(1))
        got = evaluate(enc, head, ex, s, torch.eye(32, dtype=torch.float64), "cpu")
        hook.remove()
        assert len(calls) == -(-len(texts) // 7)  # one pass per batch: no second one for the layers
        for k in range(3):
            x = torch.cat(layers[k])[:150]
            assert got["layer_isoscore"][k] == pytest.approx(float(IsoScore(x.double())), abs=1e-5)
            assert got["layer_s_inter"][k] == pytest.approx(s_inter(x, types), abs=1e-5)
            assert got["layer_twonn"][k] == pytest.approx(twonn(x), rel=1e-3)
        assert len(got["layer_isoscore"]) == 3  # the embedding layer and both blocks


def test_pairs_are_one_sequence(st_minilm):
    enc = SentenceEncoder.from_sentence_transformer(st_minilm)
    inputs = enc.tokenize(["a cat sat"], ["on the mat"], "cpu")
    tokens = enc.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    assert tokens == ["[CLS]", "a", "cat", "sat", "[SEP]", "on", "the", "mat", "[SEP]"]


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
    """MRPC's GLUE dev pairs can be built from the files at hand: they are the held-out data; WNLI's dev file is not in
    the mirror: a fixed stratified split of the training data is held out instead, and said so."""
    mrpc = read_task(prepare("glue/mrpc", data_dir=tmp_path, mirror=shared_mirror, progress=False))
    train, dev, info = held_out(
        mrpc, "glue/mrpc", examples_of(mrpc), fraction=0.1, data_dir=tmp_path, mirror=shared_mirror
    )
    assert info == {"source": "validation split", "file": "glue/MRPC/msr_paraphrase_train.txt", "n": 408}
    assert (
        len(train) == 3668 and len(dev) == 408 and dev.pair and not set(zip(dev.a, dev.b)) & set(zip(train.a, train.b))
    )
    wnli = read_task(prepare("glue/wnli", data_dir=tmp_path, mirror=shared_mirror, progress=False))
    train, dev, info = held_out(
        wnli, "glue/wnli", examples_of(wnli), fraction=0.1, data_dir=tmp_path, mirror=shared_mirror
    )
    assert (
        info["source"] == "fixed stratified split of the training data"
        and len(train) + len(dev) == 635
        and info["n"] == len(dev)
    )


def test_phrase_disjoint_split_on_a_hand_case():
    """Held-out items are whole sentences (one per class here); training loses every phrase inside one."""
    from isoflow.finetune.data import Examples

    phrases = {
        "a good film": ["good film", "a good", "film"],
        "a great plot": ["great plot", "great"],
        "a bad film": ["bad film", "bad", "film"],
        "a dull plot": ["dull plot", "dull"],
    }
    texts = [t for sentence, parts in phrases.items() for t in [sentence, *parts]]
    positive = {"a good film", "good film", "a good", "film", "a great plot", "great plot", "great"}
    ex = Examples(texts, None, np.array([int(t in positive) for t in texts]), ["neg", "pos"])
    assert sorted(texts[i] for i in maximal_phrases(texts)) == sorted(phrases)
    train, held, dropped = phrase_disjoint_split(ex, 2)
    assert sorted(held.y) == [0, 1] and set(held.a) <= set(phrases)  # one whole sentence per class
    inside = {t for sentence in held.a for t in phrases[sentence]}
    assert sorted(train.a) == sorted(
        t for t in texts if t not in inside and t not in held.a
    )  # "film" goes with either film
    assert dropped == len(texts) - len(held) - len(train) == len([t for t in texts if t in inside])


def test_phrase_splits_agree_with_their_definitions_on_random_phrase_sets():
    """maximal_phrases and phrase_disjoint_split against their definitions, written with strings: a text is maximal
    when it lies inside no other text (" a b " in " x a b y "), and training keeps the texts that neither lie inside a
    held-out item nor hold one. Random phrase sets, duplicates and one-word texts included."""
    from isoflow.finetune.data import Examples

    rng = np.random.default_rng(7)
    for case in range(40):
        vocab = [f"w{i}" for i in range(int(rng.integers(2, 6)))]
        sentences = [" ".join(rng.choice(vocab, int(rng.integers(1, 7)))) for _ in range(int(rng.integers(4, 9)))]
        texts = [
            " ".join(s.split()[i:j])
            for s in sentences
            for i in range(len(s.split()))
            for j in range(i + 1, len(s.split()) + 1)
            if rng.random() < 0.4 or (i, j) == (0, len(s.split()))
        ]

        def holds(outer: str, inner: str) -> bool:
            return f" {inner} " in f" {outer} "

        expected = [i for i, t in enumerate(texts) if not any(holds(u, t) and u != t for u in texts)]
        got = maximal_phrases(texts)
        assert got.tolist() == expected, case
        y = np.arange(len(texts)) % 2
        if len(got) <= 2 or len(np.unique(y[got])) < 2:  # two held-out items, one per class, and one to train on
            continue
        train, held, dropped = phrase_disjoint_split(Examples(texts, None, y, ["a", "b"]), 2)
        assert set(held.a) <= {texts[i] for i in got}
        # a copy of a held-out item holds it too: dropped
        kept = [t for i, t in enumerate(texts) if not any(holds(h, t) or holds(t, h) for h in held.a)]
        assert sorted(train.a) == sorted(kept) and dropped == len(texts) - len(held) - len(kept), case


@pytest.mark.slow
def test_sst2_heldout_is_fixed_and_shares_no_phrase_with_training(tmp_path, shared_mirror):
    sst2 = read_task(
        prepare("glue/sst2", data_dir=tmp_path, mirror=shared_mirror, progress=False, allow_download=False)
    )
    ex = examples_of(sst2)
    train, held, info = held_out(
        sst2, "glue/sst2", ex, fraction=0.1, max_heldout=500, data_dir=tmp_path, mirror=shared_mirror
    )
    again = held_out(sst2, "glue/sst2", ex, fraction=0.1, max_heldout=500, data_dir=tmp_path, mirror=shared_mirror)
    assert held.a == again[1].a and train.a == again[0].a and info == again[2]  # no seed: the same for every run
    assert info["n"] == len(held) == 500 and len(train) + len(held) + info["dropped_training_phrases"] == len(ex)
    held_text = " || ".join(f" {t.strip()} " for t in held.a)
    assert not [t for t in train.a if f" {t.strip()} " in held_text]  # no training phrase inside a held-out sentence
    assert len(np.bincount(held.y)) == 2 and min(np.bincount(held.y)) > 200  # stratified: both classes


def test_zero_weight_is_the_plain_run_bit_for_bit(polarity_small, tmp_path, monkeypatch, tiny_bert):
    """λ = 0 with I-STAR, weight 0 with CosReg, a loop with no regulariser at all and a learning-rate candidate (placed
    where the choice reads it) write the same numbers."""
    common = dict(epochs=1, batch_size=16, max_heldout=20, shrinkage_points=2000)
    runs = [
        polarity_run(polarity_small, tmp_path / "a", tiny_bert, istar_lambda=0.0, **common),
        polarity_run(polarity_small, tmp_path / "b", tiny_bert, reg="cosreg", cosreg_weight=0.0, **common),
    ]

    class Nothing:  # the loop must not call a regulariser whose weight is 0
        def __call__(self, *a, **k):
            raise AssertionError("a zero-weight regulariser was computed")

    monkeypatch.setattr(train_module, "regulariser", lambda s: Nothing())
    runs.append(polarity_run(polarity_small, tmp_path / "c", tiny_bert, istar_lambda=0.0, **common))
    runs.append(polarity_run(polarity_small, tmp_path / "d", tiny_bert, lr_candidate=True, **common))
    frames = [pd.read_parquet(p).drop(columns=["reg", "cosreg_weight"]) for p, _ in runs]
    steps = [pd.read_parquet(p.with_name("seed0.steps.parquet")) for p, _ in runs]
    candidate = LrRun("polarity-120", tiny_bert.name, 1e-5, 0).path(tmp_path / "d")  # the default rate
    assert runs[3][1] == Path(f"{candidate}.json")
    for other in (1, 2, 3):
        pd.testing.assert_frame_equal(frames[0], frames[other], check_exact=True)
        pd.testing.assert_frame_equal(steps[0], steps[other], check_exact=True)
    assert (steps[0]["penalty"] == 0).all() and runs[1][0].parent.name == "cosreg0"


def test_sigma_s_is_reestimated_from_the_current_model_every_epoch(polarity_small, tmp_path, monkeypatch, tiny_bert):
    """Σ_S before training (for epoch 1), after every epoch (for the next one), and the last one (the final model's)
    is what the final held-out IsoScore* uses."""
    estimates, used, evaluated = [], [], []
    original_estimate, original_forward, original_evaluate = (
        train_module.estimate_reference,
        IStarLoss.forward,
        train_module.evaluate,
    )

    def estimate(encoder, train, s, device, epoch):
        C, n = original_estimate(encoder, train, s, device, epoch)
        estimates.append((epoch, C, float(next(encoder.parameters()).detach().sum())))
        return C, n

    def forward(self, states, mask=None):
        used.append(self.reference)
        return original_forward(self, states, mask)

    def evaluate(encoder, head, ex, s, reference, device, *rest):
        evaluated.append(reference)
        return original_evaluate(encoder, head, ex, s, reference, device, *rest)

    pulled = []  # the pull measured after every Σ_S, with it (its penalty calls are not training steps)
    monkeypatch.setattr(train_module, "pull_at", lambda encoder, head, reg, *a: pulled.append(reg.reference) or 0.5)
    monkeypatch.setattr(train_module, "estimate_reference", estimate)
    monkeypatch.setattr(IStarLoss, "forward", forward)
    monkeypatch.setattr(train_module, "evaluate", evaluate)
    parquet, record = polarity_run(
        polarity_small,
        tmp_path,
        tiny_bert,
        0,
        istar_lambda=1.0,
        epochs=2,
        batch_size=50,
        max_heldout=20,
        shrinkage_points=1500,
    )
    assert [e for e, _, _ in estimates] == [0, 1, 2]
    assert estimates[0][2] != estimates[1][2] != estimates[2][2]  # three different models: pretrained, after epoch 1, 2
    per_epoch = len(used) // 2  # 100 training examples in batches of 50: 2 steps an epoch
    assert all(u is estimates[0][1] for u in used[:per_epoch]) and all(u is estimates[1][1] for u in used[per_epoch:])
    assert (
        [id(r) for r in evaluated] == [id(r) for r in pulled] == [id(C) for _, C, _ in estimates]
    )  # the final measurement: the final model's Σ_S
    assert pd.read_parquet(parquet)["pull"].tolist() == [0.5] * 3
    info = json.loads(record.read_text())
    assert_one_record_schema(info, "finetune")
    assert all(n >= 1500 for n in info["reference_points"]) and len(info["reference_points"]) == 3


def test_reference_covariance_is_the_covariance_of_the_points(polarity_small, st_minilm):
    """Σ_S from a running sum over batches equals the covariance of the same points computed at once."""
    task = read_task(polarity_small / "tasks/polarity-120")
    ex = examples_of(task)
    s = train_module.FinetuneSettings("polarity-120", "minilm", 0, shrinkage_points=10**9, eval_batch_size=7)
    enc = SentenceEncoder.from_sentence_transformer(st_minilm)
    C, n = train_module.estimate_reference(enc, ex, s, "cpu", 0)
    with torch.no_grad():
        pooled, states, mask = enc.eval()(enc.tokenize(ex.a, None, "cpu"), hidden_states=True)
        points = penalty_points("tokens-all-layers", pooled, states, mask)
    assert n == points.shape[0] and torch.allclose(C, covariance(points), atol=1e-4, rtol=1e-4)


def test_records_epochs_and_settings(polarity_small, tmp_path, tiny_bert):
    parquet, record = polarity_run(
        polarity_small,
        tmp_path,
        tiny_bert,
        1,
        istar_lambda=-1.0,
        epochs=2,
        batch_size=16,
        heldout_fraction=0.2,
        lr=1e-4,
        shrinkage_points=2000,
    )
    assert parquet == tmp_path / "finetune/runs/polarity-120/tiny-bert/istar-1/seed1.parquet"
    epochs = pd.read_parquet(parquet)
    info = json.loads(record.read_text())
    assert list(epochs["epoch"]) == [0, 1, 2] and info["complete"] and not info.get("diverged")
    assert info["held_out"] == {
        "source": "fixed stratified split of the training data",
        "fraction": 0.2,
        "seed": 0,
        "n": 24,
    }
    assert info["validation"] == {  # carved from the 96 left for training: model selection never reads the held-out
        "source": "fixed stratified split of the training data",
        "fraction": 0.1,
        "seed": 1,
        "n": 10,
    }
    settings = info["settings"]
    assert info["n_validation"] == 10 and settings["pooling"] == "mean" == info["pooling"]  # a BERT: mean pooling
    assert epochs["validation_accuracy"].between(0, 1).all() and epochs["validation_loss"].notna().all()
    predictions = np.stack(epochs["predictions"].to_numpy())
    assert predictions.shape == (3, 24) and len(info["heldout_labels"]) == 24
    assert (predictions == np.array(info["heldout_labels"])).mean(axis=1) == pytest.approx(epochs["accuracy"])
    assert (
        info["n_train"] == 86
        and settings["istar_lambda"] == -1.0
        and settings["zeta"] == 0.2
        and settings["reg"] == "istar"
    )
    assert (settings["points"], settings["weight_decay"], settings["dropout"]) == ("tokens-all-layers", 0.0, 0.1)
    for col in (
        "accuracy",
        "metric",
        "loss",
        "isoscore",
        "isoscore_star",
        "isoscore_points",
        "cosine_points",
        "silhouette",
        "twonn",
        "lid_mle",
        "cosine_anisotropy",
    ):
        assert epochs[col].notna().all(), col
    assert len(epochs["mean_abs_activation"].iloc[-1]) == 32  # the tiny BERT's width
    assert info["train_sentences_per_second"] > 0 and info["eval_sentences_per_second"] > 0


def test_seeds_share_the_heldout_set(polarity_small, tmp_path, tiny_bert):
    """Seeds vary the initialisation and the batch order only: at epoch 0 (the pretrained encoder) every seed measures
    the same held-out geometry."""
    first = [
        pd.read_parquet(
            polarity_run(
                polarity_small,
                tmp_path,
                tiny_bert,
                seed,
                **SMALL_RUN,
            )[0]
        ).iloc[0]
        for seed in (0, 1)
    ]
    for col in ("isoscore", "isoscore_points", "cosine_points", "cosine_anisotropy"):
        assert first[0][col] == first[1][col], col


def test_an_interrupted_run_leaves_no_record(polarity_small, tmp_path, tiny_bert):
    def stop(epoch, step, loss):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        polarity_run(
            polarity_small,
            tmp_path,
            tiny_bert,
            0,
            batch_size=16,
            callback=stop,
        )
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob("*.parquet"))


def test_every_epoch_is_compared_with_the_pretrained_model(polarity_small, tmp_path, tiny_bert):
    """The manipulation check's IsoScore* against the pretrained model's Σ_S (equal to IsoScore* at epoch 0, where Σ_S
    is the pretrained one) and CKA per layer to the pretrained model's held-out states (1 at epoch 0, below once
    training moved the weights), the penalty's pull at the run's λ after every epoch; TwoNN per layer at the ends
    only when asked."""
    parquet, record = polarity_run(
        polarity_small, tmp_path, tiny_bert, istar_lambda=-1.0, epochs=2, batch_size=25, max_heldout=20,
        shrinkage_points=1000, layer_geometry=True, lr=1e-3, cka_points=60, layer_twonn="first-and-last",
    )  # fmt: skip
    df = pd.read_parquet(parquet)
    first, last = df.iloc[0], df.iloc[-1]
    assert first["isoscore_star_pretrained"] == pytest.approx(first["isoscore_star"], rel=1e-12)
    assert last["isoscore_star_pretrained"] != pytest.approx(last["isoscore_star"], rel=1e-6)
    assert list(first["layer_cka_pretrained"]) == pytest.approx([1.0] * 3, abs=1e-9)  # embeddings + 2 layers
    assert all(0 < c < 0.9999 for c in last["layer_cka_pretrained"][1:])
    # BERT's first position is [CLS], a special token the layers leave out: past the first position is every token
    assert list(last["layer_cka_pretrained_past_first"]) == list(last["layer_cka_pretrained"])
    assert (df["pull"] > 0).all() and len(df) == 3
    # every layer's TwoNN before training and after the last epoch only; IsoScore every epoch
    twonn = np.array(df["layer_twonn"].tolist())
    assert np.isfinite(twonn[[0, 2]]).all() and np.isnan(twonn[1]).all()
    assert np.isfinite(np.array(df["layer_isoscore"].tolist())).all()


@pytest.mark.slow
def test_a_sweeps_runs_share_the_pretrained_pass_and_write_what_they_would_alone(
    polarity_small, tmp_path, monkeypatch, tiny_bert
):
    """The first run of a sweep leaves the pretrained encoder's epoch-0 pass beside its runs (a progress file, not a
    run); a run of another seed and λ reads it instead of passing over the held-out examples again, and writes
    exactly what it writes alone; a run on other points makes its own."""
    settings = dict(epochs=1, batch_size=25, max_heldout=20, shrinkage_points=1000, layer_geometry=True, cka_points=60)
    passes = []
    original = train_module._held_out_pass
    monkeypatch.setattr(train_module, "_held_out_pass", lambda *a: passes.append(1) or original(*a))
    polarity_run(polarity_small, tmp_path / "sweep", tiny_bert, 0, istar_lambda=0.0, **settings)
    assert len(passes) == 2  # epoch 0 and epoch 1
    runs = tmp_path / "sweep/finetune/runs/polarity-120/tiny-bert"
    (kept,) = runs.glob(".pass-*.partial")
    shared, _ = polarity_run(polarity_small, tmp_path / "sweep", tiny_bert, 1, istar_lambda=-1.0, **settings)
    assert len(passes) == 3  # epoch 1 only: epoch 0 read from the shared pass
    alone, _ = polarity_run(polarity_small, tmp_path / "alone", tiny_bert, 1, istar_lambda=-1.0, **settings)
    pd.testing.assert_frame_equal(pd.read_parquet(shared), pd.read_parquet(alone), check_exact=True)
    polarity_run(polarity_small, tmp_path / "sweep", tiny_bert, 0, istar_lambda=1.0, points="pooled", **settings)
    assert len(list(runs.glob(".pass-*.partial"))) == 2 and kept.is_file()


@pytest.mark.slow
def test_a_stopped_run_resumes_after_its_last_epoch_with_the_numbers_of_a_run_never_stopped(
    polarity_small, tmp_path, tiny_bert
):
    """Stopped in its second epoch, a run keeps its state after the first (.seed0.partial, no record); the same command
    trains only epochs 2 and 3 and writes what an uninterrupted run writes, bit for bit (weights, AdamW, the batch
    order, dropout's random state, Σ_S); the state is then removed. A state saved for other settings is not used."""
    from isoflow.atomic import in_progress_path
    from isoflow.provenance import code_version

    settings = dict(
        istar_lambda=1.0, epochs=3, batch_size=50, max_heldout=20, shrinkage_points=1000, layer_geometry=True
    )  # layer geometry: the pretrained model's states, kept for CKA, are saved and put back too
    whole, whole_record = polarity_run(polarity_small, tmp_path / "whole", tiny_bert, **settings)
    trained = []

    def stop_in_epoch_2(epoch, step, loss):
        trained.append(epoch)
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        polarity_run(polarity_small, tmp_path / "parts", tiny_bert, callback=stop_in_epoch_2, **settings)
    run = tmp_path / "parts/finetune/runs/polarity-120/tiny-bert/istar1/seed0"
    saved = in_progress_path(run)
    assert saved.name == ".seed0.partial" and saved.is_file() and not list(run.parent.glob("*.json"))
    assert trained == [1, 1, 2]
    trained.clear()
    parquet, record = polarity_run(
        polarity_small,
        tmp_path / "parts",
        tiny_bert,
        callback=lambda epoch, step, loss: trained.append(epoch),
        **settings,
    )
    assert trained == [2, 2, 3, 3]  # epoch 1 not trained again
    pd.testing.assert_frame_equal(pd.read_parquet(whole), pd.read_parquet(parquet), check_exact=True)
    steps = [pd.read_parquet(p.with_name("seed0.steps.parquet")) for p in (whole, parquet)]
    pd.testing.assert_frame_equal(*steps, check_exact=True)
    assert len(steps[0]) == 6 and steps[0]["penalty"].ne(0).all()
    counted = [json.loads(r.read_text())["train_sentences"] for r in (whole_record, record)]
    assert counted[0] == counted[1] == 3 * json.loads(record.read_text())["n_train"]  # the first epoch's counted too
    assert json.loads(record.read_text())["resumed"] == {"after_epoch": 1, "code": code_version()}
    assert "resumed" not in json.loads(whole_record.read_text())
    assert not saved.exists()
    # A state left by a run of other settings (here another learning rate) is not resumed: the run starts afresh.
    with pytest.raises(KeyboardInterrupt):
        polarity_run(polarity_small, tmp_path / "parts", tiny_bert, callback=stop_in_epoch_2, **settings)
    trained.clear()
    polarity_run(
        polarity_small,
        tmp_path / "parts",
        tiny_bert,
        callback=lambda epoch, step, loss: trained.append(epoch),
        **{**settings, "lr": 2e-5},
    )
    assert trained == [1, 1, 2, 2, 3, 3] and not saved.exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(model="bert"), "'bert' is not one of isoflow's models"),
        (dict(model="glove-50d"), "glove-50d is a static word-vector model"),
        (dict(istar_lambda=float("nan")), "lambda must be a finite number"),
        (dict(zeta=2.0), "zeta must be at most 1; got 2.0"),
        (dict(lr=0.0), "lr must be greater than 0; got 0.0"),
        (dict(epochs=0), "epochs must be at least 1; got 0"),
        (dict(epochs=2.5), "epochs must be an integer; got 2.5"),
        (dict(heldout_fraction=0.0), "heldout_fraction must be greater than 0; got 0.0"),
        (dict(points="layers"), "points must be one of tokens-all-layers, tokens-all-layers-skip-first, .*, pooled"),
        (dict(reg="l2"), "reg must be one of istar, cosreg"),
        (dict(states_points=10), "states_points needs layer_geometry"),
        (dict(states_points=10, cka_points=5, layer_geometry=True), r"states_points \(10\) must be at most cka_points"),
        (dict(reg="cosreg", istar_lambda=1.0), r"istar_lambda must be 0 with reg=cosreg"),
        (dict(task="one-class"), "holds a single class"),
        (dict(task="imdb"), "unknown task 'imdb'"),
    ],
)
def test_bad_input_fails_before_training(polarity_small, tmp_path, kwargs, message):
    write_task(
        build_task("one-class", [f"s{i}" for i in range(30)], ["pos"] * 29 + ["neg"]),
        polarity_small / "tasks/one-class",
    )
    args = {"task": "polarity-120", "model": "minilm", **kwargs}
    with pytest.raises((ValueError, RuntimeError), match=message):  # bad input, or a model not to be had
        run_finetune(
            args.pop("task"),
            args.pop("model"),
            0,
            data_dir=polarity_small,
            results=tmp_path,
            device="cpu",
            progress=False,
            **args,
        )
    assert not (tmp_path / "finetune").exists()


@pytest.mark.slow
def test_report_tables_and_figures(polarity_small, tmp_path, tiny_bert):
    common = SMALL_RUN
    records = [
        polarity_run(polarity_small, tmp_path, tiny_bert, seed, istar_lambda=lam, **common)[1]
        for lam in (-5.0, 0.0)
        for seed in (0, 1)
    ]
    records += [
        polarity_run(polarity_small, tmp_path, tiny_bert, seed, reg="cosreg", cosreg_weight=1.0, **common)[1]
        for seed in (0, 1)
    ]
    gradients = (
        tmp_path / "runs/polarity-120/tiny-bert/gradients.json"
    )  # as `isoflow finetune-diagnosis --model` writes
    gradients.parent.mkdir(parents=True)
    measured = {"task_grad_norm": 2.0, "penalty_grad_norm": 0.5, "ratio_penalty_to_task": 0.25}
    gradients.write_text(
        json.dumps(
            {
                "task": "polarity-120",
                "model": "tiny-bert",
                "batches_of_32": 2,
                "gradients_at_the_pretrained_model": {"I-STAR": {**measured, "one_minus_isoscore_star": 0.9}},
            }
        )
    )
    written = report([*records, gradients], tmp_path / "tables", tmp_path / "figures")
    pull = pd.read_csv(tmp_path / "tables/finetune_gradients.csv")
    assert pull.to_dict("records") == [
        {"task": "polarity-120", "model": "tiny-bert", "setup": "I-STAR", "batches": 2, **measured}
        | {"one_minus_isoscore_star": 0.9}
    ]
    table = pd.read_csv(tmp_path / "tables/finetune.csv")
    assert list(zip(table.reg, table.istar_lambda, table.cosreg_weight)) == [
        ("cosreg", 0, 1),
        ("istar", -5, 0),
        ("istar", 0, 0),
    ]
    assert set(table["seeds"]) == {2} and set(table["metric_name"]) == {"accuracy"}
    last = pd.concat(pd.read_parquet(r.with_suffix(".parquet")).tail(1) for r in records[:2])
    assert table.loc[1, "isoscore_star_mean"] == pytest.approx(last["isoscore_star"].mean(), abs=1e-12)
    peaks = [np.max(a) / np.median(a) for a in last["mean_abs_activation"]]  # outlier dimensions: max over median
    assert table.loc[1, "activation_peak_ratio_mean"] == pytest.approx(np.mean(peaks), rel=1e-12) and min(peaks) > 1
    paired = pd.read_csv(tmp_path / "tables/finetune_paired.csv")
    plain = pd.concat(pd.read_parquet(r.with_suffix(".parquet")).tail(1) for r in records[2:4]).set_index("seed")
    mine = last.set_index("seed")
    row = paired[(paired.reg == "istar") & (paired.weight == -5)].iloc[0]
    diffs = mine["metric"] - plain["metric"]
    assert row["metric_diff"] == pytest.approx(diffs.mean(), abs=1e-12) and row["seeds"] == 2
    half = 12.706204736174707 * diffs.std() / np.sqrt(2)  # t(0.975, 1 degree of freedom)
    assert row["metric_diff_ci_high"] == pytest.approx(diffs.mean() + half, abs=1e-9)
    for measure in ("twonn", "silhouette"):  # intrinsic dimension and clusters, paired the same way
        assert row[f"{measure}_diff"] == pytest.approx((mine[measure] - plain[measure]).mean(), abs=1e-12)
    assert {p.name for p in written} >= {
        "finetune_performance.png",
        "finetune_twonn.pdf",
        "finetune_silhouette_vs_isoscore.png",
        "finetune_baselines.png",
        "finetune_activations.png",
        "finetune_paired.md",
        "finetune_epochs.png",
    }
    assert len(pd.read_csv(tmp_path / "tables/finetune_manipulation.csv")) == 3  # every regulariser x weight
    for record in records:  # runs made before the manipulation check: its table is still written (declared), empty
        epochs = pd.read_parquet(record.with_suffix(".parquet"))
        epochs.drop(columns=["isoscore_star_pretrained"]).to_parquet(record.with_suffix(".parquet"))
    report([*records, gradients], tmp_path / "old", tmp_path / "old-figures")
    assert pd.read_csv(tmp_path / "old/finetune_manipulation.csv").empty


# ----- the workflow section -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "section, named",
    [
        ("{'tasks': ['glue/sst2'], 'models': ['minilm'], 'istar_lambdas': [0, 1], 'seeds': [0], 'zeta': 2}", "zeta"),
        ("{'tasks': ['supersense'], 'models': ['minilm'], 'istar_lambdas': [0], 'seeds': [0]}", "supersense"),
        ("{'tasks': ['glue/sst2'], 'models': ['minilm'], 'istar_lambdas': [0], 'seeds': [0], 'epoch': 1}", "epoch"),
        ("{'tasks': ['glue/sst2'], 'models': ['minilm'], 'istar_lambdas': ['x'], 'seeds': [0]}", "istar_lambdas"),
        (
            "{'tasks': ['glue/sst2'], 'models': ['minilm'], 'cosreg': [1], 'seeds': [0]}",
            "finetune.cosreg is now finetune.cosreg_weights",
        ),
    ],
)
def test_workflow_finetune_section_is_schema_checked(section, named):
    """A finetune section with a value out of range, a word task, a misspelt key, a weight that is not a number or a
    key under its former name is refused before anything is planned, naming it (and the new name). (`--config` merges
    into the file's section, so a key missing there is inherited; the schema's `required` covers config files.)"""
    problems = config_refusals(f"finetune={section}")
    # one line per mistake, naming the field: the schema's objection or the name check's
    assert problems and all(line.startswith("finetune") for line in problems), problems
    assert any(named in line for line in problems)


@pytest.mark.slow
def test_workflow_finetune_section_plans_its_weights_seeds_and_settings(tmp_path, plan_checkout):
    """A finetune section given on the command line plans a run per weight and seed, with its settings in each
    command, and the penalty's pull once per task x model."""
    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    good = sh(
        [
            "snakemake",
            "-n",
            "-p",
            "finetune",
            *where,
            "finetune={'tasks': ['glue/sst2'], 'models': ['minilm'], "
            "'istar_lambdas': [-1, 0, 1], 'cosreg_weights': [0, 2], 'seeds': [0, 1], 'zeta': 0.5, 'points': 'pooled', "
            "'gradient_batches': 3}",
        ],
        plan_checkout,
    ).stdout
    assert re.search(
        r"^finetune_run\s+8$", good, re.M
    )  # 3 I-STAR weights and one CosReg weight (0 is the plain run) x 2 seeds
    assert re.search(r"^finetune_gradients\s+1$", good, re.M) and "finetune-diagnosis --model minilm " in good
    assert "--task glue/sst2 --batches 3 " in good and "finetune_gradients.csv" in good
    assert (
        "minilm/cosreg2/seed1.json" in good
        and "--cosreg-weight 2 " in good
        and "--istar-lambda -1 " in good
        and "--points pooled" in good
    )


@pytest.mark.slow
def test_workflow_plans_the_seed_floor_and_the_comparisons_with_namesakes(tmp_path, plan_checkout):
    """With states_points and two seeds, each run writes its states outside runs/ (a temporary output), one job per
    weight compares its seeds, and the report tabulates it; the learning-rate candidates write none. With same_as,
    each run is compared with its namesake there; a same_as folder that is not there is refused by its field."""
    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    other = tmp_path / "published/runs"
    for weight in (0, 1):
        for seed in (0, 1):
            (other / f"glue/sst2/minilm/istar{weight}").mkdir(parents=True, exist_ok=True)
            (other / f"glue/sst2/minilm/istar{weight}/seed{seed}.json").write_text("{}")
    plan = sh(
        [
            "snakemake", "-n", "-p", "finetune", *where,
            "finetune={'tasks': ['glue/sst2'], 'models': ['minilm'], 'istar_lambdas': [0, 1], 'cosreg_weights': [], "
            f"'seeds': [0, 1], 'layer_geometry': True, 'states_points': 50, 'lr_candidates': [1e-5, 2e-5], "
            f"'same_as': '{other}'}}",
        ],
        plan_checkout,
    ).stdout  # fmt: skip
    counts = job_counts(plan)
    assert counts["finetune_run"] == 4 and counts["finetune_seed_floor"] == 2 and counts["finetune_lr_run"] == 2
    assert counts["finetune_same_as"] == 4 and "finetune_same_as.csv" in plan
    runs = f"{tmp_path}/results/finetune/runs/glue/sst2/minilm/istar1"
    assert (
        f"isoflow finetune-same-as {runs}/seed1.json {other}/glue/sst2/minilm/istar1/seed1.json "
        f"--out {runs}/same-as-seed1.json" in plan
    )
    assert config_refusals("finetune={'same_as': 'no/such/runs'}") == [
        f"finetune.same_as: no/such/runs does not exist; fix the path (relative to {ROOT})"
    ]
    states = f"{tmp_path}/results/finetune/states/glue/sst2/minilm/istar1/seed1.pt"
    (run,) = [line for line in plan.splitlines() if f"--states-out {states} " in line]
    assert "--states-points 50 " in run
    floor = f"{tmp_path}/results/finetune/runs/glue/sst2/minilm/istar1/cka-between-seeds.json"
    assert f"isoflow finetune-seed-floor {states.replace('seed1', 'seed0')} {states} --out {floor}" in plan
    assert "finetune_seed_floor.csv" in plan
    candidates = [line for line in plan.splitlines() if "--lr-candidate" in line and "isoflow finetune " in line]
    assert len(candidates) == 2 and all("--states-points 0" in line for line in candidates)
    assert placed_where_planned(plan) == counts["finetune_run"] + counts["finetune_lr_run"]


def test_isoscore_star_paired_only_on_the_same_points():
    """CosReg on the last layer's token states has its IsoScore* on other points than plain fine-tuning's every layer:
    no paired IsoScore* for it, while the metric is paired as for any run."""
    runs = [("istar", 0.0, 0.0, "tokens-all-layers"), ("istar", -1.0, 0.0, "tokens-all-layers")]
    runs += [("cosreg", 0.0, 1.0, "tokens-last-layer")]
    info, epochs = [], []
    for i, (reg, lam, w, points) in enumerate(runs):
        for seed in (0, 1):
            key = dict(task="t", model="m", reg=reg, istar_lambda=lam, cosreg_weight=w, seed=seed)
            info.append({**key, "points": points, "epochs": 1})
            measured = {"metric": 0.5 + 0.1 * i + 0.01 * seed, "isoscore_star": 0.2 * i + 0.1 * seed}
            pooled = {"twonn": 10.0 + i, "silhouette": 0.1 * i, "isoscore": 0.05 * i}
            epochs.append({**key, "epoch": 1, **measured, **pooled})
    table = paired(pd.DataFrame(epochs), pd.DataFrame(info)).set_index("reg")
    assert table.loc["istar", "isoscore_star_diff"] == pytest.approx(0.2)
    assert table.loc["istar", "metric_diff"] == pytest.approx(0.1) and table.loc["istar", "twonn_diff"] == 1.0
    assert table.loc["istar", "isoscore_diff"] == pytest.approx(0.05)  # the pooled outputs': paired on any points
    cosreg = table.loc["cosreg"]
    assert np.isnan(cosreg["isoscore_star_diff"]) and np.isnan(cosreg["isoscore_star_diff_ci_low"])
    assert cosreg["metric_diff"] == pytest.approx(0.2) and cosreg["seeds"] == 2
    assert cosreg["isoscore_diff"] == pytest.approx(0.1)


@pytest.mark.slow
def test_report_of_runs_measured_per_layer(polarity_small, tmp_path, tiny_bert):
    common = dict(**SMALL_RUN, layer_geometry=True, sample_cap=300)
    records = [
        polarity_run(polarity_small, tmp_path, tiny_bert, seed, istar_lambda=lam, **common)[1]
        for lam in (-1.0, 0.0)
        for seed in (0, 1)
    ]
    written = report(records, tmp_path / "tables", tmp_path / "figures")
    table = pd.read_csv(tmp_path / "tables/finetune_layers.csv")
    assert len(table) == 2 * 3 * 5  # weights x layers (embeddings + 2 blocks) x measures (3, and CKA two ways)
    runs = {seed: pd.read_parquet(r.with_suffix(".parquet")).set_index("epoch") for seed, r in zip((0, 1), records[:2])}
    row = table[(table.weight == -1) & (table.layer == 2) & (table.measure == "IsoScore")].iloc[0]
    changes = [runs[s].loc[1, "layer_isoscore"][2] - runs[s].loc[0, "layer_isoscore"][2] for s in (0, 1)]
    assert row["change"] == pytest.approx(np.mean(changes), abs=1e-12) and row["seeds"] == 2
    assert row["before"] == pytest.approx(np.mean([runs[s].loc[0, "layer_isoscore"][2] for s in (0, 1)]), abs=1e-12)
    assert {"finetune_layers.png", "finetune_layers.md"} <= {p.name for p in written}
    cka = table[(table.weight == -1) & (table.layer == 2) & (table.measure == "CKA (pretrained)")].iloc[0]
    assert cka["before"] == pytest.approx(1.0, abs=1e-9)
    after = np.mean([runs[s].loc[1, "layer_cka_pretrained"][2] for s in (0, 1)])
    assert cka["after"] == pytest.approx(after, abs=1e-12)
    # against the plain run of the same seed, the seed as the unit: which layers the regulariser changed
    plain = {s: pd.read_parquet(r.with_suffix(".parquet")).set_index("epoch") for s, r in zip((0, 1), records[2:])}
    paired = [runs[s].loc[1, "layer_cka_pretrained"][2] - plain[s].loc[1, "layer_cka_pretrained"][2] for s in (0, 1)]
    from isoflow.reporting.significance import seed_interval

    over = seed_interval(paired)
    assert (cka["vs_plain"], cka["vs_plain_low"], cka["vs_plain_p"]) == pytest.approx(
        (over["mean"], over["low"], over["p"]), abs=1e-12
    )
    assert cka["vs_plain_seeds"] == 2 and table[table.weight == 0]["vs_plain"].isna().all()
    assert "CKA (pretrained): linear CKA" in (tmp_path / "tables/finetune_layers.md").read_text()
    # every epoch, every layer: the seeds' mean of what each run recorded
    by_epoch = pd.read_csv(tmp_path / "tables/finetune_layers_epochs.csv")
    assert len(by_epoch) == 2 * 5 * 2  # weights x measures x epochs (0 = before training, 1)
    assert [c for c in by_epoch.columns if c.startswith("layer ")] == ["layer 0", "layer 1", "layer 2"]
    for epoch in (0, 1):
        row = by_epoch[(by_epoch.weight == -1) & (by_epoch.measure == "TwoNN") & (by_epoch.epoch == epoch)].iloc[0]
        assert row["layer 1"] == pytest.approx(
            np.mean([runs[s].loc[epoch, "layer_twonn"][1] for s in (0, 1)]), abs=1e-12
        )
    assert list(by_epoch.loc[by_epoch.weight == 0, "measure"].drop_duplicates()) == [
        "IsoScore",
        "S_inter",
        "TwoNN",
        "CKA (pretrained)",
        "CKA (pretrained), past 1st",
    ]
    assert {"finetune_layers_epochs.png", "finetune_layers_epochs.md"} <= {p.name for p in written}


def test_runs_write_the_states_their_cka_compares_and_the_seed_floor_reads_them(
    polarity_small, tmp_path, tiny_bert, capsys
):
    """With states_points, a run writes its first held-out tokens' states under the pretrained model (one model, so
    every seed's the same, the second seed's read from the sweep's shared pass) and after its last epoch; CKA between
    them is what the record says (states_points = cka_points: the same tokens); `isoflow finetune-seed-floor` compares
    the seeds and the report tabulates it."""
    from conftest import isoflow_cli

    settings = dict(**SMALL_RUN, layer_geometry=True, cka_points=60, states_points=60, lr=1e-3)
    records = [polarity_run(polarity_small, tmp_path, tiny_bert, seed, **settings)[1] for seed in (0, 1)]
    paths = [r.with_name(r.stem + ".states.pt") for r in records]  # the default place: beside the record
    states = [torch.load(p, weights_only=False) for p in paths]
    assert [s["settings"]["seed"] for s in states] == [0, 1] and len(states[0]["layers"]) == 3
    assert all(torch.equal(a, b) for a, b in zip(states[0]["pretrained"], states[1]["pretrained"]))
    assert torch.equal(states[0]["ids"], states[1]["ids"]) and states[0]["layers"][0].shape == (60, 32)
    out = tmp_path / "cka-between-seeds.json"
    code, _ = isoflow_cli("finetune-seed-floor", *paths, "--out", out)
    assert code == 0 and "seeds [0, 1]: 3 layers, 60 tokens" in capsys.readouterr().out
    floor = json.loads(out.read_text())
    for seed, record in enumerate(records):
        last = pd.read_parquet(record.with_suffix(".parquet")).iloc[-1]
        recorded = list(last["layer_cka_pretrained"])
        # the same tokens' CKA: the record's in float32 products, the floor's in float64, from the same states
        assert [row["cka_pretrained"][seed] for row in floor["layers"]] == pytest.approx(recorded, rel=1e-6)
        assert recorded[0] < 1 - 1e-6  # training moved even the embedding layer: a comparison that can fail
    report(records + [out], tmp_path / "tables", tmp_path / "figures")
    table = pd.read_csv(tmp_path / "tables/finetune_seed_floor.csv")
    assert len(table) == 3 * 3 and table["seeds"].eq(2).all()  # 3 layers × 3 token sets
    row = table[(table.layer == 2) & (table.tokens == "all")].iloc[0]
    assert row["cka_between_seeds_min"] == pytest.approx(floor["layers"][2]["cka_between_seeds"][0], abs=1e-12)


def test_a_run_is_compared_with_its_namesake_bit_for_bit(polarity_small, tmp_path, tiny_bert, capsys):
    """A run made again (here, in another results folder) is identical to the first; a changed number, a flipped
    prediction, a changed step and a setting the other lacks are each named; another run than the namesake is
    refused; the report tabulates the comparisons."""
    from conftest import isoflow_cli

    from isoflow.finetune.same_as import compare_runs

    settings = dict(**SMALL_RUN, lr=1e-3)
    _, first = polarity_run(polarity_small, tmp_path / "a", tiny_bert, 0, **settings)
    _, again = polarity_run(polarity_small, tmp_path / "b", tiny_bert, 0, **settings)
    out = tmp_path / "same-as-seed0.json"
    code, _ = isoflow_cli("finetune-same-as", again, first, "--out", out)
    assert code == 0 and "identical ->" in capsys.readouterr().out
    same = json.loads(out.read_text())
    assert same["identical"] and same["predictions_differing"] == [0, 0] and same["settings_differing"] == []
    # a measurement the other run's code did not make is listed apart, not a difference
    epochs = pd.read_parquet(first.with_suffix(".parquet"))
    epochs.drop(columns="twonn").to_parquet(first.with_suffix(".parquet"))
    c = compare_runs(again, first)
    assert c["identical"] and c["epochs"]["columns_in_one_only"] == ["twonn"]
    # another machine's run, as a copy with one number, one prediction, one step and one setting changed
    epochs.loc[1, "isoscore"] += 0.25
    epochs.at[1, "predictions"] = [1 - epochs.loc[1, "predictions"][0], *epochs.loc[1, "predictions"][1:]]
    epochs.to_parquet(first.with_suffix(".parquet"))
    steps = pd.read_parquet(first.with_name("seed0.steps.parquet"))
    steps.loc[0, "loss"] += 1e-7
    steps.to_parquet(first.with_name("seed0.steps.parquet"))
    record = json.loads(first.read_text())
    record["settings"]["states_points"] = 10
    record["machine"] = {"cpu": "Another CPU", "cpu_capability": "AVX2", "cores": 4}
    first.write_text(json.dumps(record))
    c = compare_runs(again, first)
    assert not c["identical"] and c["predictions_differing"] == [0, 1] and c["settings_differing"] == ["states_points"]
    assert set(c["epochs"]["columns_differing"]) == {"isoscore", "predictions"} and c["steps"]["columns_differing"]
    assert c["epochs"]["columns_differing"]["isoscore"] == pytest.approx(0.25, rel=1e-9)
    assert c["steps"]["columns_differing"]["loss"] == pytest.approx(1e-7, rel=1e-3)
    _, other_seed = polarity_run(polarity_small, tmp_path / "b", tiny_bert, 1, **settings)
    with pytest.raises(ValueError, match=r"seed1.json: another run than .*seed0.json \(seed 1, not 0\)"):
        compare_runs(again, other_seed)
    changed = tmp_path / "changed/same-as-seed0.json"  # the report knows a comparison by its name
    changed.parent.mkdir()
    changed.write_text(json.dumps(c))
    report([again, out, changed], tmp_path / "tables", tmp_path / "figures")
    table = pd.read_csv(tmp_path / "tables/finetune_same_as.csv")
    assert list(table["identical"]) in ([True, False], [False, True]) and table["seed"].eq(0).all()
    here = json.loads(again.read_text())["machine"]
    changed_row = table[~table["identical"]].iloc[0]
    assert changed_row["machines"] == f"{here['cpu']} ({here['cpu_capability']}) | Another CPU (AVX2)"


def test_a_causal_lm_is_read_at_its_last_non_padding_token(tiny_gpt2, tiny_bert):
    """The head of a causal LM reads the last real token's state, whichever side is padded; an encoder's the mean."""
    from transformers import AutoModel, AutoTokenizer

    from isoflow.finetune.model import SentenceEncoder, is_causal_lm
    from isoflow.models.local import load_hf

    encoder = SentenceEncoder.from_transformer(*load_hf(tiny_gpt2))
    assert encoder.pooling == "last" and encoder.tokenizer.padding_side == "right"
    assert SentenceEncoder.from_transformer(*load_hf(tiny_bert)).pooling == "mean"
    assert is_causal_lm(AutoModel.from_pretrained(tiny_gpt2).config)
    texts = ["the film was good", "bad", "a very long and dull story ."]
    with torch.no_grad():
        alone = [
            encoder.transformer(**encoder.tokenizer(t, return_tensors="pt")).last_hidden_state[0, -1] for t in texts
        ]
        for side in ("right", "left"):
            encoder.tokenizer.padding_side = side
            inputs = encoder.tokenize(texts, None, "cpu")
            pooled, _, mask = encoder(inputs)
            states = encoder.transformer(**inputs).last_hidden_state
            lengths = mask.sum(dim=1)
            last = lengths - 1 if side == "right" else torch.full_like(lengths, mask.shape[1] - 1)
            assert torch.equal(pooled, states[torch.arange(3), last])
            if side == "right":  # right padding leaves a causal LM's states of the real tokens as they are alone
                for p, a in zip(pooled, alone):
                    assert torch.allclose(p, a, atol=1e-5)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    with pytest.raises(ValueError, match="pooling must be one of"):
        SentenceEncoder.from_transformer(AutoModel.from_pretrained(tiny_bert), tokenizer, pooling="max")


def test_bf16_runs_the_transformer_under_autocast_and_keeps_the_rest_float32(polarity_small, tmp_path, tiny_bert):
    """--precision bf16 (tested on the CPU, where autocast runs too): the transformer's states come out as float32
    close to the float32 run's, and a run with I-STAR trains, records its precision and finite numbers."""
    from isoflow.finetune.model import SentenceEncoder
    from isoflow.models.local import load_hf

    encoder = SentenceEncoder.from_transformer(*load_hf(tiny_bert))
    inputs = encoder.tokenize(["the film was good", "a dull plot"], None, "cpu")
    with torch.no_grad():
        pooled32, states32, _ = encoder(inputs, hidden_states=True)
        encoder.precision = "bf16"
        pooled16, states16, _ = encoder(inputs, hidden_states=True)
    assert pooled16.dtype == torch.float32 and all(h.dtype == torch.float32 for h in states16)
    assert torch.allclose(pooled16, pooled32, atol=0.1) and not torch.equal(pooled16, pooled32)
    parquet, record = polarity_run(
        polarity_small,
        tmp_path,
        tiny_bert,
        0,
        istar_lambda=-1.0,
        epochs=1,
        batch_size=16,
        lr=1e-4,
        shrinkage_points=2000,
        precision="bf16",
    )
    info = json.loads(record.read_text())
    epochs = pd.read_parquet(parquet)
    assert info["settings"]["precision"] == "bf16" and not info["diverged"]
    assert np.isfinite(epochs[["loss", "isoscore_star", "accuracy"]].to_numpy()).all()
    steps = pd.read_parquet(parquet.with_name(parquet.stem + ".steps.parquet"))
    assert steps["penalty"].abs().gt(0).all()  # the penalty computed (in float32) at every step


def test_a_run_takes_its_learning_rate_from_the_choice_and_records_it(polarity_small, tmp_path, tiny_bert):
    from isoflow.cli import main

    choice = {"lr": 3e-4, "chosen_on": "best validation metric of plain runs", "candidates": {"0.0003": {}}}
    (tmp_path / "chosen.json").write_text(json.dumps(choice))
    args = ["finetune", "--task", "polarity-120", "--model", str(tiny_bert), "--epochs", "1", "--batch-size", "16"]
    args += ["--lr", "1e-5", "--lr-from", str(tmp_path / "chosen.json"), "--shrinkage-points", "500", "--quiet"]
    assert main([*args, "--data-dir", str(polarity_small), "--results", str(tmp_path), "--device", "cpu"]) == 0
    (record,) = tmp_path.rglob("seed0.json")
    info = json.loads(record.read_text())
    assert info["settings"]["lr"] == 3e-4 and info["lr_selection"] == choice  # --lr-from overrides --lr


def test_the_diagnosis_gradients_of_any_model_on_a_prepared_task(polarity_small, tiny_gpt2, tmp_path, capsys):
    """`isoflow finetune-diagnosis --model M --task T`: part 1 of the diagnosis for a model of one's own (here a tiny
    causal LM, read at its last non-padding token), written to <out>/gradients.json; equal to gradient_ratios on the
    same encoder and sentences."""
    from isoflow.cli import main
    from isoflow.finetune.data import examples_of, stratified_subset
    from isoflow.finetune.diagnosis import gradient_ratios
    from isoflow.models.local import load_hf

    args = ["finetune-diagnosis", "--model", str(tiny_gpt2), "--model-name", "tiny-gpt2", "--task", "polarity-120"]
    args += ["--batches", "2", "--data-dir", str(polarity_small), "--out", str(tmp_path)]
    assert main(args) == 0
    out = json.loads((tmp_path / "gradients.json").read_text())
    assert (out["model"], out["pooling"], out["batches_of_32"]) == ("tiny-gpt2", "last", 2)
    ex = stratified_subset(examples_of(read_task(polarity_small / "tasks/polarity-120")), 64, 0)
    encoder = SentenceEncoder.from_transformer(*load_hf(tiny_gpt2))
    again = gradient_ratios(encoder, list(ex.a), ex.y, 2, 0)
    assert out["gradients_at_the_pretrained_model"].keys() == again.keys()
    for setup, numbers in again.items():
        assert out["gradients_at_the_pretrained_model"][setup] == pytest.approx(numbers, rel=1e-5)
    capsys.readouterr()
    assert main([*args[:-6], "--batches", "9", "--data-dir", str(polarity_small), "--out", str(tmp_path)]) == 2
    assert "polarity-120: 120 examples, fewer than 9 batches of 32; give fewer --batches" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--cosreg", "1"], "--cosreg is now --cosreg-weight"),
        (["--istar", "-1"], "--istar is now --istar-lambda"),
        (["--cosreg-weight", "x"], "--cosreg-weight: expected a number"),
    ],
)
def test_the_weights_former_options_are_refused_with_their_names_now(capsys, argv, message):
    from isoflow.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["finetune", "--task", "t", "--model", "m", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_one_run_has_one_regulariser(capsys):
    from isoflow.cli import main

    assert main(["finetune", "--task", "t", "--model", "m", "--istar-lambda", "-1", "--cosreg-weight", "1"]) == 2
    assert "--istar-lambda and --cosreg-weight name two regularisers" in capsys.readouterr().err


def test_a_learning_rate_candidate_is_a_plain_run(capsys):
    """--lr-candidate places the run where the learning-rate choice reads it; a weight there is refused before any
    data is read."""
    from isoflow.cli import main

    assert main(["finetune", "--task", "t", "--model", "m", "--lr-candidate", "--meandir-weight", "2"]) == 2
    assert "a learning-rate candidate is a plain run: its meandir weight is 2, not 0" in capsys.readouterr().err


def test_the_diagnosis_gradients_on_a_tiny_model(tiny_bert):
    """isoflow.finetune.diagnosis (make diagnose-istar): the task's and the penalty's gradient norms per setup."""
    from isoflow.finetune.diagnosis import gradient_ratios
    from isoflow.finetune.model import SentenceEncoder
    from isoflow.models.local import load_hf

    encoder = SentenceEncoder.from_transformer(*load_hf(tiny_bert))
    texts = [
        " ".join(np.random.default_rng(i).choice(["good", "bad", "film", "plot", "a", "the"], 6)) for i in range(64)
    ]
    out = gradient_ratios(encoder, texts, np.arange(64) % 2, batches=2, seed=0)
    assert len(out) == 3
    for setup in out.values():
        assert setup["task_grad_norm"] > 0 and setup["penalty_grad_norm"] > 0
        assert setup["ratio_penalty_to_task"] == pytest.approx(
            setup["penalty_grad_norm"] / setup["task_grad_norm"], rel=0.5
        )


def test_the_figures_name_the_model_in_each_panel_and_show_a_difference_of_zero(tmp_path, monkeypatch):
    """The performance figure's panel names its task and, where it is the only one, its model (several are told apart
    by marker, in the legend); the paired-difference figure marks each run by a dot, inside the frame even at 0."""
    from isoflow.finetune import figures
    from isoflow.reporting import figures as shared

    drawn = []

    def keep(fig, stem):
        drawn.append(fig)
        return []

    monkeypatch.setattr(shared, "save", keep)
    monkeypatch.setattr(figures, "save", keep)
    lambdas = [-1.0, 0.0, 1.0]
    one = pd.DataFrame(
        {
            "task": "glue/sst2",
            "model": "smollm2-135m",
            "istar_lambda": lambdas,
            "metric_name": "accuracy",
            "metric_mean": [0.86, 0.88, 0.87],
            "metric_std": 0.01,
            "isoscore_star_mean": [1e-5, 2e-5, 3e-5],
            "isoscore_star_std": 1e-6,
        }
    )
    figures.performance_figure(one, tmp_path / "one")
    figures.performance_figure(pd.concat([one, one.assign(model="minilm")]), tmp_path / "two")
    assert drawn[0].axes[0].get_title() == "glue/sst2 x smollm2-135m"
    assert drawn[1].axes[0].get_title() == "glue/sst2"
    assert {"smollm2-135m", "minilm"} <= {t.get_text() for t in drawn[1].legends[0].get_texts()}
    # The controls table's rows: the plain run and the bag of words get no bar; each regulariser two, at the best
    # validation epoch (plain) and after the last (hatched), side by side around its tick.
    controls = pd.DataFrame(
        {
            "task": "glue/sst2",
            "model": ["smollm2-135m"] * 3 + ["bag-of-words"],
            "reg": ["istar", "istar", "istar", "tf-idf + logistic regression"],
            "weight": [-1.0, 0.0, 1.0, np.nan],
            "seeds": [5, 5, 4, 1],
            "selection": ["best validation epoch"] * 3 + ["C = 1 by validation"],
            "diff_selected": [0.0, np.nan, -0.02, np.nan],
            "diff_selected_low": [0.0, np.nan, -0.03, np.nan],
            "diff_selected_high": [0.0, np.nan, -0.01, np.nan],
            "diff_last": [0.004, np.nan, 0.009, np.nan],
            "diff_last_low": [0.001, np.nan, 0.009, np.nan],
            "diff_last_high": [0.007, np.nan, 0.009, np.nan],
        }
    )
    figures.baselines_figure(one, controls, tmp_path / "pairs")
    ax = drawn[2].axes[0]
    assert ax.get_title() == "glue/sst2 x smollm2-135m"
    dots = np.concatenate([c.get_offsets() for c in ax.collections if len(c.get_offsets()) == 2])
    assert np.allclose(dots, [[-0.2, 0.0], [0.8, -0.02], [0.2, 0.004], [1.2, 0.009]])
    assert ax.get_ylim()[0] < -0.03 and 0.009 < ax.get_ylim()[1]
    hatched = [bar.get_hatch() for bar in ax.patches]
    assert hatched == [None, None, "///", "///"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["I-STAR λ = −1\n(5 seeds)", "I-STAR λ = 1\n(4 seeds)"]
    assert [t.get_text() for t in drawn[2].legends[0].get_texts()] == [
        "at the best validation epoch",
        "after the last epoch",
    ]
    # Runs without a validation split are read at their last epoch only: one plain bar each, centred on its tick.
    figures.baselines_figure(one, controls.assign(selection="last epoch (no validation split)"), tmp_path / "last")
    ax = drawn[3].axes[0]
    dots = np.concatenate([c.get_offsets() for c in ax.collections if len(c.get_offsets()) == 2])
    assert np.allclose(dots, [[0.0, 0.004], [1.0, 0.009]])
    assert [bar.get_hatch() for bar in ax.patches] == [None, None]
    assert [t.get_text() for t in drawn[3].legends[0].get_texts()] == ["after the last epoch"]
    # Plain runs only (a determinism rerun): no empty frame, a sentence saying there is nothing to compare.
    figures.baselines_figure(one, controls[controls.weight.isna() | (controls.weight == 0)], tmp_path / "plain")
    (ax,) = drawn[4].axes
    assert not ax.axison and "nothing to compare" in ax.texts[0].get_text()


def test_a_lambda_set_by_the_pull_is_named_in_units_of_lambda_star(tmp_path, monkeypatch):
    """Runs whose λ came from the penalty's pull (istar_pull: λ in units of λ*) are labelled "λ = −λ*", "λ = 0.0016
    λ*" in every legend and panel title, and the captions give λ* as the runs computed it; runs of both kinds in one
    report are refused (two units on one axis)."""
    from isoflow.finetune import figures
    from isoflow.finetune.report import lambda_star_note
    from isoflow.reporting import figures as shared

    assert [figures.run_label("istar", w, "λ*") for w in (-1.0, 0.0016, 1.0, 0.0)] == [
        "I-STAR λ = −λ*",
        "I-STAR λ = 0.0016 λ*",
        "I-STAR λ = λ*",
        "none (λ = 0)",
    ]
    assert (
        figures.run_label("istar", -1.0) == "I-STAR λ = −1" and figures.run_label("cosreg", 1.0, "λ*") == "CosReg w = 1"
    )
    info = pd.DataFrame({"reg": "istar", "istar_lambda": [-1.0, 0.0, 1.0], "istar_pull": [0.62, 0.0, 0.62]})
    assert figures.lambda_unit(info) == "λ*"
    assert figures.lambda_unit(info.assign(istar_pull=0.0)) == ""
    assert figures.lambda_unit(info.drop(columns="istar_pull")) == ""
    with pytest.raises(ValueError, match="both from the penalty's pull"):
        figures.lambda_unit(info.assign(istar_pull=[0.62, 0.0, 0.0]))

    drawn = []
    monkeypatch.setattr(shared, "save", lambda fig, stem: drawn.append(fig) or [])
    table = pd.DataFrame(
        {
            "task": "glue/sst2",
            "model": "smollm2-135m",
            "istar_lambda": [-1.0, 0.0, 0.0016],
            "metric_name": "accuracy",
            "metric_mean": [0.86, 0.88, 0.87],
            "metric_std": 0.01,
            "isoscore_star_mean": [0.03, 0.16, 0.17],
            "isoscore_star_std": 0.01,
        }
    )
    figures.performance_figure(table, tmp_path / "perf", "λ*")
    assert [t.get_text() for t in drawn[0].legends[0].get_texts()] == ["λ = −λ*", "λ = 0", "λ = 0.0016 λ*"]

    runs = []
    for i, (lam, star) in enumerate([(-4.4172, 4.4172), (0.0071, 4.4182), (None, None)]):
        record = {"settings": {}} | ({"istar_lambda_from_pull": {"istar_pull": 0.62, "lambda": star}} if lam else {})
        runs.append(tmp_path / f"run{i}.json")
        runs[-1].write_text(json.dumps(record))
    note = lambda_star_note(runs)
    assert "units of λ* = 4.418 (4.4172–4.4182 over the 2 runs" in note and "0.62 times" in note
    assert lambda_star_note(runs[2:]) == ""


def test_layer_tokens_know_which_follow_their_sequences_first_position():
    """A causal LM's first position (no [CLS] before it) is kept as a token but marked, so CKA can be taken without
    the attention sink; right and left padding alike; CKA past the first position is CKA of those rows alone."""
    from types import SimpleNamespace

    from isoflow.finetune.train import LayerTokens, cka_to_pretrained
    from isoflow.metrics import linear_cka

    tokenizer = SimpleNamespace(all_special_ids=[0], unk_token_id=None)  # 0: padding
    ids = torch.tensor([[5, 6, 7, 0], [0, 8, 9, 4]])
    mask = (ids != 0).long()
    g = torch.Generator().manual_seed(0)
    states = [torch.randn(2, 4, 3, generator=g) for _ in range(2)]
    tokens = LayerTokens(tokenizer, cap=10, device="cpu")
    tokens.add(states, mask, ids)
    assert tokens.past_first(10).tolist() == [False, True, True, False, True, True]
    assert tokens.past_first(4).tolist() == [False, True, True, False]
    before = tokens.points()
    after = [x + torch.randn(x.shape, generator=g) for x in before]
    keep = tokens.past_first(6)
    got = cka_to_pretrained(before, after, keep)
    assert got["layer_cka_pretrained"] == [linear_cka(b, a) for b, a in zip(before, after)]
    assert got["layer_cka_pretrained_past_first"] == [linear_cka(b[keep], a[keep]) for b, a in zip(before, after)]
    assert got["layer_cka_pretrained_past_first"] != got["layer_cka_pretrained"]


def test_the_manipulation_check_pairs_each_weight_with_the_plain_run_of_its_seed():
    """finetune_manipulation: IsoScore* against the pretrained Σ_S after the last epoch, each λ minus λ = 0 of the same
    seed, over seeds (by hand: the differences' mean and t-interval); the pull's medians; the share of flipped
    held-out predictions; a diverged run left out."""
    from scipy.stats import t as student

    from isoflow.finetune.manipulation import manipulation_table

    plain_after, pushed_after = [0.20, 0.22, 0.25], [0.30, 0.36, 0.31]
    rows, info = [], []
    for seed in range(3):
        runs = ((0.0, plain_after[seed], (np.nan, np.nan)), (1.0, pushed_after[seed], (0.6, 0.2 + seed)))
        for lam, after, pulls in runs:
            preds = [0, 1, 1, 0] if lam == 0 else [0, 1, 0 if seed else 1, 0]  # seed 0 flips none, seeds 1-2 one of 4
            for epoch, star, pull in ((0, 0.15, pulls[0]), (1, after, pulls[1])):
                rows.append(
                    dict(task="t", model="m", reg="istar", istar_lambda=lam, cosreg_weight=0.0, seed=seed, epoch=epoch,
                         isoscore_star_pretrained=star, pull=pull, predictions=preds, metric=after)
                )  # fmt: skip
            info.append(dict(task="t", model="m", reg="istar", istar_lambda=lam, cosreg_weight=0.0, seed=seed))
    # a fourth seed whose λ = 1 run diverged: neither it nor its plain run's pairing counts
    rows.append(dict(rows[-1], seed=3, isoscore_star_pretrained=0.9))
    info = [dict(r, diverged=False) for r in info] + [dict(info[-1], seed=3, diverged=True)]
    epochs, info = pd.DataFrame(rows), pd.DataFrame(info)
    table = manipulation_table(epochs, info).set_index("weight")
    d = np.subtract(pushed_after, plain_after)
    half = student.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    row = table.loc[1.0]
    assert row["seeds"] == 3 and row["isoscore_star_pretrained_before"] == pytest.approx(0.15)
    assert row["isoscore_star_pretrained_after"] == pytest.approx(np.mean(pushed_after))
    assert (row["vs_plain_diff"], row["vs_plain_low"], row["vs_plain_high"]) == pytest.approx(
        (d.mean(), d.mean() - half, d.mean() + half)
    )
    assert (row["pull_before"], row["pull_after"]) == pytest.approx((0.6, 1.2))
    assert row["flips_vs_plain"] == pytest.approx((0 + 0.25 + 0.25) / 3)
    assert np.isnan(table.loc[0.0, "vs_plain_diff"]) and np.isnan(table.loc[0.0, "flips_vs_plain"])
    # the seed floor: λ = 0's seeds predict alike; λ = 1's pairs 0-1, 0-2, 1-2 differ on 1, 1 and 0 of 4
    plain = table.loc[0.0]
    assert (plain["flips_between_seeds"], plain["flips_between_seeds_max"]) == (0.0, 0.0)
    assert plain["metric_between_seeds"] == pytest.approx(np.mean([0.02, 0.05, 0.03]))  # |0.20-0.22|, |0.20-0.25|, ...
    floor = (row["flips_between_seeds"], row["flips_between_seeds_min"], row["flips_between_seeds_max"])
    assert floor == pytest.approx(((0.25 + 0.25 + 0) / 3, 0.0, 0.25))


def test_every_table_and_figure_the_report_may_write_has_its_caption():
    """The HTML report (snakemake --report) reads a caption for each declared output: report/<table>_table.rst and
    report/<figure>.rst, for every output finetune-report may be declared to write."""
    from isoflow.finetune.settings import report_outputs

    tables, figures = report_outputs(layer_geometry=True, gradients=True, zeta=0.2, seed_floor=True, same_as=True)
    wanted = [f"{t}_table.rst" for t in tables] + [f"{f}.rst" for f in figures]
    assert {"finetune_manipulation_table.rst", "finetune_seed_floor_table.rst", "finetune_same_as_table.rst"} <= set(
        wanted
    )
    assert not [w for w in wanted if not (ROOT / "report" / w).is_file()]
