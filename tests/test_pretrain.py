"""Plain language models of our own: the corpus without task text, the tokenizers, the objectives, the loop's
resumption, and the model folder every other command takes (tiny models and a few hundred sentences; never the published
ones)."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch
from conftest import assert_one_record_schema, isoflow_cli

from isoflow.pretrain.corpus import TaskText, build_corpus, decontaminate, split_documents, text_file_documents
from isoflow.pretrain.settings import PretrainSettings
from isoflow.pretrain.tokenizer import train_tokenizer

WORDS = (
    "the cat sat on the mat while a dog slept near the warm fire and the rain fell on the roof of the old house "
    "children played in the garden when the sun came out after lunch and their mother read a long book"
).split()


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(5, 14)))).capitalize() + " ." for _ in range(n)]


def write_corpus_text(path, n_docs: int = 40, per_doc: int = 8) -> None:
    text = sentences(n_docs * per_doc)
    path.write_text("\n\n".join("\n".join(text[i * per_doc : (i + 1) * per_doc]) for i in range(n_docs)) + "\n")


TINY = dict(
    layers=2,
    hidden=32,
    heads=2,
    ffn=64,
    seq_len=32,
    vocab_size=400,
    batch_size=4,
    lr=1e-3,
    eval_every=3,
    eval_sequences=8,
    checkpoint_every=2,
    log_every=2,
)


# ----- the corpus -----------------------------------------------------------------------------------------------------


def test_task_text_is_found_by_8_grams_and_short_texts_whole():
    task = TaskText(
        ["It is a truly remarkable film about the sea and its people", "a quiet little story unfolds", "bad film"]
    )
    assert task.overlaps(
        "Critics said: it is a truly remarkable film about the sea, twice"
    )  # an 8-gram, other case and punctuation
    assert not task.overlaps("It is a truly remarkable film about rivers")  # 7 words of the long text only
    assert task.overlaps("Then a quiet little story unfolds slowly .")  # a 5-word task text whole
    assert not task.overlaps("A quiet little story .")
    assert not task.overlaps("What a bad film .")  # 2-word texts are too generic to match


def test_decontamination_drops_sentences_and_emptied_documents():
    task = TaskText(["one two three four five six seven eight"])
    docs = [
        ["keep me", "x one two three four five six seven eight y"],
        ["one two three four five six seven eight"],
        ["fine"],
    ]
    kept, dropped = decontaminate(docs, task)
    assert kept == [["keep me"], ["fine"]] and dropped == 2


def test_held_out_documents_are_whole_seeded_and_disjoint():
    docs = [[f"doc {i} a", f"doc {i} b"] for i in range(100)]
    train, held = split_documents(docs, 0.1, seed=3)
    assert len(held) == 10 and len(train) == 90
    assert {tuple(d) for d in train}.isdisjoint({tuple(d) for d in held})
    assert split_documents(docs, 0.1, seed=3) == (train, held)
    assert split_documents(docs, 0.1, seed=4)[1] != held


def test_wordnet_glosses_are_definitions_and_examples():
    from isoflow.datasets.wordnet import SYSTEM_DIRS, WordNet

    wn = WordNet.from_dir(SYSTEM_DIRS[0])
    glosses = {key: (definition, examples) for key, definition, examples in wn.glosses()}
    assert (
        len(glosses) == 117_659
    )  # WordNet 3.0's synsets: 82,115 nouns, 13,767 verbs, 18,156 adjectives, 3,621 adverbs
    line = next(ln for ln in (SYSTEM_DIRS[0] / "data.adv").read_text().splitlines() if " wrongfully " in ln)
    definition, examples = glosses[f"adv:{line.split()[0]}"]
    assert definition == "in an unjust or unfair manner"
    assert examples == [
        "the employee claimed that she was wrongfully dismissed",
        "people who were wrongfully imprisoned should be released",
    ]


def test_corpus_excludes_a_task_sentence_and_records_what_it_did(tmp_path, shared_mirror):
    polarity = (shared_mirror / "sentence_polarity" / "rt-polarity.pos").read_text().splitlines()[7]
    source = tmp_path / "text.txt"
    write_corpus_text(source)
    source.write_text(source.read_text() + "\n" + polarity + "\nA sentence of its own that stays .\n")
    out = build_corpus(
        tmp_path / "corpus",
        sources=[str(source)],
        exclude_tasks=["polarity", "glue/qqp"],
        data_dir=tmp_path / "data",
        mirror=shared_mirror,
        allow_download=False,
        log=lambda line: None,
    )
    text = (out / "train.txt").read_text() + (out / "heldout.txt").read_text()
    assert polarity not in text and "A sentence of its own that stays ." in text
    record = json.loads((out / "corpus.json").read_text())
    assert record["sources"][str(source)]["dropped_sentences"] == 1
    assert record["excluded_tasks"]["polarity"]["texts"] == 10_662
    assert "unavailable" in record["excluded_tasks"]["glue/qqp"]
    assert record["train"]["documents"] + record["heldout"]["documents"] == 41
    assert record["heldout"]["documents"] == 1  # 2 % of 41 documents, at least one


def test_a_text_file_without_text_is_refused(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="empty.txt: the corpus is empty"):
        text_file_documents(empty)


# ----- tokenizers and objectives --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordpiece():
    return train_tokenizer("wordpiece", sentences(300), 400, 32)


@pytest.fixture(scope="module")
def bpe():
    return train_tokenizer("bpe", sentences(300), 400, 32)


def test_tokenizers_save_and_load_as_berts_and_gpt2s(tmp_path, wordpiece, bpe):
    from transformers import AutoTokenizer

    wordpiece.save_pretrained(tmp_path / "wp")
    bpe.save_pretrained(tmp_path / "bpe")
    wp = AutoTokenizer.from_pretrained(tmp_path / "wp")
    assert type(wp).__name__ == "BertTokenizer"
    assert wp.convert_ids_to_tokens(wp("The Cat sat.")["input_ids"]) == ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
    gp = AutoTokenizer.from_pretrained(tmp_path / "bpe", add_prefix_space=True)  # as the layer analysis loads it
    assert type(gp).__name__ == "GPT2Tokenizer"
    assert gp.convert_ids_to_tokens(gp([["The", "cat"]], is_split_into_words=True)["input_ids"][0])[-1] == "Ġcat"
    plain = AutoTokenizer.from_pretrained(tmp_path / "bpe")
    assert (
        plain.decode(plain("The cat sat on the mat.")["input_ids"]) == "The cat sat on the mat."
    )  # byte-level: lossless


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_a_tokenizer_trained_twice_has_the_same_vocabulary(kind):
    # tokenizers' own WordPieceTrainer numbers its ## tokens in hash-map order: another vocabulary on most calls
    first, second = (train_tokenizer(kind, sentences(300, seed=4), 400, 32).get_vocab() for _ in range(2))
    assert first == second and sorted(first.values()) == list(range(len(first)))


def test_wordpiece_is_bpe_over_word_starts_and_continuations():
    from isoflow.pretrain.tokenizer import wordpiece_vocabulary

    vocab = wordpiece_vocabulary(["Abab abab abba ab"] * 3, 40)
    # specials; the characters, sorted, as word starts then as continuations; then the merges by count: a + ##b (12
    # times), ##a + ##b (6: "abab" twice a line), ab + ##ab, ##b + ##a ("abba"), ab + ##ba. No "b": no word starts so.
    assert list(sorted(vocab, key=vocab.get)) == [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "a",
        "##a",
        "##b",
        "ab",
        "##ab",
        "abab",
        "##ba",
        "abba",
    ]
    tokenizer = train_tokenizer("wordpiece", ["Abab abab abba ab"] * 3, 40, 32)
    assert tokenizer.tokenize("ABBA abab ab ba") == ["abba", "abab", "ab", "[UNK]"]


def test_masking_is_berts_80_10_10_and_never_a_special_token(wordpiece):
    from isoflow.pretrain.train import mask_tokens

    ids = torch.randint(5, len(wordpiece), (400, 64), generator=torch.Generator().manual_seed(1))
    ids[:, 0], ids[:, -1] = wordpiece.cls_token_id, wordpiece.sep_token_id
    inputs, labels = mask_tokens(ids, wordpiece, 0.15, torch.Generator().manual_seed(2))
    chosen = labels != -100
    assert abs(chosen.float().mean().item() - 0.15) < 0.01
    assert not chosen[:, 0].any() and not chosen[:, -1].any()
    assert torch.equal(labels[chosen], ids[chosen]) and torch.equal(inputs[~chosen], ids[~chosen])
    masked = (inputs == wordpiece.mask_token_id) & chosen
    changed = chosen & ~masked & (inputs != ids)
    assert abs(masked.sum().item() / chosen.sum().item() - 0.8) < 0.02
    # a random replacement equals the original token 1 time in |V| - specials: ~10 % changed, ~10 % kept
    assert abs(changed.sum().item() / chosen.sum().item() - 0.1) < 0.015
    assert (inputs[changed] >= 5).all()


def test_packing_keeps_the_text_in_order_with_separators(wordpiece, bpe):
    from isoflow.pretrain.train import pack

    docs = [sentences(6, seed=i) for i in range(5)]
    seqs = pack(docs, wordpiece, "masked", 32)
    assert (
        seqs.shape[1] == 32
        and (seqs[:, 0] == wordpiece.cls_token_id).all()
        and (seqs[:, -1] == wordpiece.sep_token_id).all()
    )
    stream = wordpiece.backend_tokenizer.encode(" ".join(docs[0]), add_special_tokens=False).ids
    assert seqs[0, 1:31].tolist() == stream[:30]
    causal = pack(docs, bpe, "causal", 32)
    flat = causal.ravel().tolist()
    first = bpe.backend_tokenizer.encode(" ".join(docs[0]), add_special_tokens=False).ids
    assert flat[: len(first) + 1] == [*first, bpe.eos_token_id]
    with pytest.raises(ValueError, match="fewer than one sequence of 32"):
        pack([["Short ."]], bpe, "causal", 32)


@pytest.mark.parametrize("objective", ["masked", "causal"])
def test_loss_at_the_labelled_positions_equals_the_models_own(objective, wordpiece, bpe):
    from isoflow.pretrain.train import build_model, logits_at, pack, targets_of

    tokenizer = wordpiece if objective == "masked" else bpe
    settings = PretrainSettings(objective=objective, **TINY)
    model = build_model(settings, tokenizer).eval()
    ids = torch.from_numpy(pack([sentences(40)], tokenizer, objective, 32)[:4])
    inputs, labels = targets_of(ids, objective, tokenizer, 0.15, torch.Generator().manual_seed(0))
    logits, targets = logits_at(model, objective, inputs, labels)
    ours = torch.nn.functional.cross_entropy(logits, targets)
    theirs = model(
        input_ids=inputs, labels=labels if objective == "masked" else ids
    ).loss  # GPT-2 shifts the labels itself
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-5)


def test_same_size_for_both_objectives(wordpiece, bpe):
    from isoflow.pretrain.train import build_model, parameter_count

    bert = build_model(PretrainSettings(objective="masked", **TINY), wordpiece)
    gpt = build_model(PretrainSettings(objective="causal", **TINY), bpe)
    assert (bert.config.num_hidden_layers, bert.config.hidden_size) == (gpt.config.n_layer, gpt.config.n_embd)
    # BERT's token types and its MLM head's transform are the only differences (besides the vocabularies)
    extra = 2 * 32 + (32 * 32 + 32) + 2 * 32 + len(wordpiece)
    body = parameter_count(bert) - len(wordpiece) * 32 - extra
    assert body == pytest.approx(parameter_count(gpt) - len(bpe) * 32, rel=0.02)


def test_learning_rate_warms_up_then_decays_to_zero():
    from isoflow.pretrain.train import learning_rate

    s = PretrainSettings(steps=100, warmup=0.1, lr=1.0)
    assert [learning_rate(i, s) for i in (0, 4, 9)] == [0.1, 0.5, 1.0]
    assert learning_rate(10, s) == 1.0 and learning_rate(55, s) == 0.5 and learning_rate(99, s) == pytest.approx(1 / 90)


def test_unigram_baseline_by_hand():
    from isoflow.pretrain.train import unigram_baseline

    class Tok:
        all_special_ids = [0]

        def __len__(self):
            return 4

    train = np.array([[0, 1, 1, 2], [0, 1, 3, 3]])
    labels = torch.tensor([[-100, 1, -100, 2]])
    got = unigram_baseline(train, labels, "masked", Tok())
    p = np.array([1, 4, 2, 3]) / 10  # add-one counts of tokens 0..3, the special token not counted
    assert got["loss"] == pytest.approx(-(np.log(p[1]) + np.log(p[2])) / 2)
    assert got["accuracy"] == 0.5 and got["perplexity"] == pytest.approx(math.exp(got["loss"]))


# ----- the loop: resumable, recorded ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pretrain")
    source = folder / "text.txt"
    write_corpus_text(source, n_docs=60)
    return build_corpus(
        folder / "corpus",
        sources=[str(source)],
        exclude_tasks=[],
        settings=__import__("isoflow").pretrain.CorpusSettings(heldout_fraction=0.1),
        log=lambda line: None,
    )


@pytest.mark.parametrize("objective", ["masked", "causal"])
def test_an_interrupted_run_resumes_to_the_same_model(tmp_path, corpus, objective):
    from safetensors.torch import load_file

    from isoflow.pretrain import run_pretrain
    from isoflow.pretrain.run import checkpoint_folder

    settings = PretrainSettings(objective=objective, steps=7, **TINY)
    whole = run_pretrain(corpus, tmp_path / "whole", settings, device="cpu", progress=False, log=lambda line: None)
    assert (
        run_pretrain(
            corpus, tmp_path / "resumed", settings, device="cpu", progress=False, log=lambda line: None, stop_after=3
        )
        is None
    )
    assert not (tmp_path / "resumed").exists() and (checkpoint_folder(tmp_path / "resumed") / "state.pt").is_file()
    lines = []
    resumed = run_pretrain(corpus, tmp_path / "resumed", settings, device="cpu", progress=False, log=lines.append)
    assert any("resuming from step 3 of 7" in line for line in lines)
    a, b = load_file(whole / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ca = (whole / "curve.csv").read_text().splitlines()
    cb = (resumed / "curve.csv").read_text().splitlines()
    drop_seconds = lambda rows: [
        ",".join(f for i, f in enumerate(r.split(",")) if i != rows[0].split(",").index("seconds")) for r in rows
    ]
    assert drop_seconds(ca) == drop_seconds(cb)
    assert not checkpoint_folder(tmp_path / "resumed").exists()  # removed once the model folder is written


def test_ctrl_c_keeps_the_last_step_and_a_changed_setting_is_refused(tmp_path, corpus):
    from isoflow.pretrain.run import checkpoint_folder
    from isoflow.pretrain.train import Checkpoint

    settings = PretrainSettings(objective="masked", steps=6, **TINY)
    out = tmp_path / "bert"

    def interrupt_after_4(step):
        if step == 4:
            raise KeyboardInterrupt

    import isoflow.pretrain.train as train_module

    original = train_module.train

    def train_with_hook(*args, **kwargs):
        return original(*args, **kwargs, on_step=interrupt_after_4)

    train_module.train = train_with_hook
    try:
        from isoflow.pretrain import run_pretrain

        with pytest.raises(KeyboardInterrupt):
            run_pretrain(corpus, out, settings, device="cpu", progress=False, log=lambda line: None)
    finally:
        train_module.train = original
    assert Checkpoint(checkpoint_folder(out)).load()["step"] == 4 and not out.exists()
    with pytest.raises(ValueError, match=r"another run \(lr 0.001 \(checkpoint\) vs 0.002\); delete that folder"):
        run_pretrain(
            corpus,
            out,
            PretrainSettings(**{**settings.__dict__, "lr": 2e-3}),
            device="cpu",
            progress=False,
            log=lambda line: None,
        )


@pytest.mark.slow
def test_cli_trains_a_model_every_command_takes(tmp_path, corpus):
    out = tmp_path / "plain-gpt2"
    options = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()]
    code, err = isoflow_cli(
        "pretrain", "--corpus", corpus, "--out", out, "--objective", "causal", "--steps", "4", *options
    )
    assert code == 0, err
    record = json.loads((out / "pretrain.json").read_text())
    assert record["objective"] == "causal" and record["settings"]["steps"] == 4 and record["settings"]["seed"] == 0
    assert record["heldout"]["loss"] > 0 and record["unigram_baseline"]["perplexity"] > 1
    assert record["train_tokens"] + record["corpus"]["train"]["words"] > 0 and not record["diverged"]
    assert_one_record_schema(record, "pretrain")
    from isoflow.layers.encoder import load_encoder
    from isoflow.models.resolve import resolve_model
    from isoflow.models.spec import ModelSpec

    encoder = load_encoder(resolve_model(ModelSpec(str(out), "probe"), cache=tmp_path))
    assert (encoder.n_states, encoder.dim, encoder.max_length) == (3, 32, 32)


def test_cli_refuses_bad_settings_in_one_line(tmp_path, corpus):
    """Settings out of range, an unknown objective and a corpus not made yet: exit code 2, one line saying the fix (in
    this process: conftest.isoflow_cli)."""
    for args, message in (
        (["--heads", "3"], "heads (3) must divide hidden (256)"),
        (["--lr", "0"], "must be greater than 0"),
        (["--objective", "denoising"], "invalid choice"),
        (["--steps", "0"], "must be at least 1"),
    ):
        code, err = isoflow_cli("pretrain", "--corpus", corpus, "--out", tmp_path / "m", *args)
        assert code == 2 and message in err, err
    code, err = isoflow_cli("pretrain", "--corpus", tmp_path / "none", "--out", tmp_path / "m")
    assert code == 2 and "no train.txt; make the corpus first with `isoflow pretrain-corpus" in err


def test_the_checkpoint_schedule_has_pythias_shape():
    """Pythia's 154 checkpoints (steps 0, 1, 2, 4, ..., 512, then every 1,000 to 143,000) are the schedule of 143,000
    steps and 154 checkpoints; any run's starts at 0, ends at its last step, keeps within its count and rises."""
    from isoflow.checkpoints import checkpoint_steps

    assert checkpoint_steps(143_000, 154) == [0, *(2**k for k in range(10)), *range(1000, 143_001, 1000)]
    for steps, count in ((4000, 20), (7, 3), (10, 4), (3, 20), (1, 2), (100_000, 30)):
        series = checkpoint_steps(steps, count)
        assert series[0] == 0 and series[-1] == steps and len(series) <= count and series == sorted(set(series))
    assert checkpoint_steps(4000, 0) == []
    with pytest.raises(ValueError, match="at least 2"):
        PretrainSettings(checkpoints=1)


def test_a_run_keeps_its_checkpoint_series_as_model_folders_and_trains_the_same_model(tmp_path, corpus):
    """With checkpoints, each step of the schedule is a model folder in checkpoints/step<N>/ with its record (step,
    tokens seen, the training loss since the previous checkpoint, held-out scores at that step), loadable by path as
    every command loads a model; the last is the final model; the model trained is the one trained without a series,
    bit for bit; an interrupted run resumes and writes the series a run never stopped writes."""
    from safetensors.torch import load_file

    from isoflow.checkpoints import read_series
    from isoflow.layers.encoder import load_encoder
    from isoflow.models.resolve import resolve_model
    from isoflow.models.spec import ModelSpec
    from isoflow.pretrain import run_pretrain

    quiet = dict(device="cpu", progress=False, log=lambda line: None)
    settings = PretrainSettings(objective="causal", steps=7, checkpoints=4, **TINY)
    out = run_pretrain(corpus, tmp_path / "gpt", settings, **quiet)
    plain = run_pretrain(corpus, tmp_path / "plain", PretrainSettings(objective="causal", steps=7, **TINY), **quiet)
    weights = [load_file(p / "model.safetensors") for p in (out, plain)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[1])
    series = read_series(out)
    assert [s for s, _ in series] == [0, 1, 2, 7] == json.loads((out / "pretrain.json").read_text())["checkpoints"]
    records = [json.loads((p / "checkpoint.json").read_text()) for _, p in series]
    assert [r["tokens_seen"] for r in records] == [0, 4 * 32, 2 * 4 * 32, 7 * 4 * 32]
    assert records[0]["train_loss"] is None and [r["train_loss_steps"] for r in records] == [0, 1, 1, 5]
    curve = {row["step"]: row for row in csv.DictReader(open(out / "curve.csv"))}
    assert [float(curve[str(s)]["heldout_loss"]) for s, _ in series] == [r["heldout"]["loss"] for r in records]
    last = load_file(series[-1][1] / "model.safetensors")
    assert all(torch.equal(last[k], weights[0][k]) for k in last)
    encoder = load_encoder(resolve_model(ModelSpec(str(series[1][1]), "step1"), cache=tmp_path))
    assert (encoder.n_states, encoder.dim) == (3, 32)
    run_pretrain(corpus, tmp_path / "parts", settings, stop_after=4, **quiet)
    parts = run_pretrain(corpus, tmp_path / "parts", settings, **quiet)
    again = read_series(parts)
    assert [s for s, _ in again] == [0, 1, 2, 7]
    for (_, a), (_, b) in zip(series, again):
        wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
        assert all(torch.equal(wa[k], wb[k]) for k in wa)
        ra, rb = (json.loads((p / "checkpoint.json").read_text()) for p in (a, b))
        assert (ra["train_loss"], ra["heldout"]) == (rb["train_loss"], rb["heldout"])
