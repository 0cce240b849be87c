"""Dataset loaders on the real files (through the mirror) and on format fixtures for what cannot be had here."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from isoflow.datasets import DATASETS, build, canonical_name, prepare, read_task, task_dir
from isoflow.datasets.codwoe import read_entries
from isoflow.datasets.table import build_task, write_task
from isoflow.datasets.wordnet import NOUN_SUPERSENSES, WordNet
from isoflow.errors import DataFormatError
from isoflow.fetch import ChecksumError, OfflineError


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


def prepared(name, data_dir, mirror, **kw):
    return read_task(prepare(name, data_dir=data_dir, mirror=mirror, progress=False, **kw))


# Real data -------------------------------------------------------------------------------------------


def test_polarity(data_dir, shared_mirror):
    t = prepared("polarity", data_dir, shared_mirror)
    assert len(t.examples) == 10_662 and len(t.items) == 10_662
    assert Counter(t.examples["label"]) == {"pos": 5331, "neg": 5331}
    assert t.sources[0]["sha256"] == "6e1ed4405b65c7eabf1d199a7f7c437091ac21da0ea7467b410a74062574566b"
    assert t.items["text"].iloc[0].startswith("simplistic , silly and tedious")
    assert not t.pair and not t.multilabel


def test_snli_gold_pairs(data_dir, shared_mirror):
    t = prepared("snli", data_dir, shared_mirror)
    assert len(t.examples) == 9_842 and len(t.items) == 12_982
    assert Counter(t.examples["label"]) == {"entailment": 3329, "contradiction": 3278, "neutral": 3235}
    assert t.pair and t.examples[["a", "b"]].max().max() == 12_981
    first = t.examples.iloc[0]
    assert t.items["text"][first["a"]] == "Two women are embracing while holding to go packages."


@pytest.mark.parametrize(
    "name,n,counts,items",
    [
        ("glue/cola", 8_551, {"1": 6023, "0": 2528}, None),
        ("glue/sst2", 67_349, {"1": 37569, "0": 29780}, None),
        ("glue/rte", 2_490, None, None),
        ("glue/wnli", 635, None, None),
        ("glue/mrpc", 3_668, None, None),
    ],
)
def test_glue_real(data_dir, shared_mirror, name, n, counts, items):
    t = prepared(name, data_dir, shared_mirror)
    assert len(t.examples) == n
    if counts:
        assert Counter(t.examples["label"]) == counts
    assert t.meta()["dropped_rows"] == 0
    assert all(s["sha256"] for s in t.sources)


def test_mrpc_is_msr_train_minus_dev_ids(data_dir, shared_mirror):
    t = prepared("glue/mrpc", data_dir, shared_mirror)
    assert t.meta()["dev_pairs_removed"] == 408
    # The pair missing from the one GLUE-format copy found online must be present here.
    texts = set(t.items["text"])
    msr = (shared_mirror / "glue/MRPC/msr_paraphrase_train.txt").read_text(encoding="utf-8-sig").splitlines()
    row = next(r.split("\t") for r in msr if r.startswith(("0\t2750203\t2750153", "1\t2750203\t2750153")))
    assert row[3] in texts and row[4] in texts


def test_short_names_and_unknown():
    assert canonical_name("cola") == "glue/cola"
    with pytest.raises(ValueError, match="unknown dataset 'imdb'; known: polarity, snli, glue/cola"):
        canonical_name("imdb")
    assert len(DATASETS) == 14 and DATASETS[-1] == "supersense-unambiguous"


# Fixtures in the canonical formats ------------------------------------------------------------------

GLUE_FIXTURES = {
    "QQP": (
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        "0\t1\t2\tHow do I learn Python?\tWhat is the best way to learn Python?\t1\n"
        "1\t3\t4\tWhy is the sky blue?\tHow far is the moon?\t0\n"
        "2\t5\t6\tA malformed row without label\n"
        "3\t7\t8\tWhy is the sky blue?\tWhat makes the sky blue?\t1\n"
    ),
    "MNLI": (
        "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label\n"
        "0\t1\t1n\tgov\t(x)\t(y)\t(X)\t(Y)\tThe cat sat.\tA cat is sitting.\tentailment\tentailment\n"
        "1\t2\t2c\tgov\t(x)\t(y)\t(X)\t(Y)\tThe cat sat.\tNo animal sat.\tcontradiction\tcontradiction\n"
        "2\t3\t3n\tgov\t(x)\t(y)\t(X)\t(Y)\tIt rained.\tThe game was cancelled.\tneutral\tneutral\n"
    ),
    "QNLI": (
        "index\tquestion\tsentence\tlabel\n"
        "0\tWhat color is the sky?\tThe sky is blue on clear days.\tentailment\n"
        "1\tWho wrote Hamlet?\tParis is in France.\tnot_entailment\n"
    ),
}


@pytest.fixture
def glue_fixture_site(tmp_path):
    """The three big GLUE tasks as their canonical zips, at file:// URLs."""
    site = tmp_path / "site"
    site.mkdir()
    zips = {"QQP": "QQP-clean", "MNLI": "MNLI", "QNLI": "QNLIv2"}
    for task, text in GLUE_FIXTURES.items():
        with zipfile.ZipFile(site / f"{zips[task]}.zip", "w") as zf:
            zf.writestr(f"{task}/train.tsv", text)
            zf.writestr(f"{task}/dev.tsv", text)
    return site


@pytest.mark.parametrize(
    "task,n,labels,pair", [("qqp", 3, {"1": 2, "0": 1}, True), ("mnli", 3, None, True), ("qnli", 2, None, True)]
)
def test_big_glue_loaders_on_fixtures(tmp_path, glue_fixture_site, monkeypatch, task, n, labels, pair):
    from isoflow.datasets import glue

    monkeypatch.setattr(glue, "GLUE_ZIP", glue_fixture_site.as_uri() + "/{}.zip")
    spec = glue.TASKS[task]
    spec_url = glue_fixture_site.as_uri() + "/" + spec.resource.urls[0].rsplit("/", 1)[1]
    monkeypatch.setitem(glue.TASKS, task, replace(spec, resource=replace(spec.resource, urls=(spec_url,))))
    t = read_task(prepare(f"glue/{task}", data_dir=tmp_path / "data", progress=False))
    assert len(t.examples) == n and t.pair == pair
    if labels:
        assert Counter(t.examples["label"]) == labels
    if task == "qqp":
        assert t.meta()["dropped_rows"] == 1
        assert len(t.items) == 5  # "Why is the sky blue?" is stored once


def test_tsv_missing_column_is_clear_and_writes_nothing(tmp_path, shared_mirror):
    mirror = tmp_path / "mirror"
    (mirror / "glue/RTE").mkdir(parents=True)
    bad = (shared_mirror / "glue/RTE/train.tsv").read_text().replace("sentence2", "sentenceX", 1)
    (mirror / "glue/RTE/train.tsv").write_text(bad)
    from isoflow.datasets import glue

    spec = glue.TASKS["rte"]
    unpinned = replace(spec, resource=replace(spec.resource, sha256=None, size=None))
    pytest.MonkeyPatch().setitem(glue.TASKS, "rte", unpinned)
    try:
        with pytest.raises(
            ChecksumError,
            match=r"glue/RTE/train.tsv from mirror .* is not usable: header has no column\(s\) \['sentence2'\]",
        ):
            prepare("glue/rte", data_dir=tmp_path / "data", mirror=mirror, progress=False)
    finally:
        glue.TASKS["rte"] = spec
    assert not task_dir("glue/rte", tmp_path / "data").exists()


def test_pinned_checksum_protects_against_edited_mirror(tmp_path, shared_mirror):
    mirror = tmp_path / "mirror"
    (mirror / "glue/WNLI").mkdir(parents=True)
    (mirror / "glue/WNLI/train.tsv").write_text(
        (shared_mirror / "glue/WNLI/train.tsv").read_text().replace("carrot", "parrot")
    )
    with pytest.raises(ChecksumError, match="glue/WNLI/train.tsv from mirror"):
        prepare("glue/wnli", data_dir=tmp_path / "data", mirror=mirror, progress=False, allow_download=False)
    assert not (tmp_path / "data/tasks/glue/wnli").exists()
    assert not any(p.is_file() for p in (tmp_path / "data/raw").rglob("*train.tsv*"))


def test_missing_mirror_file_offline(tmp_path):
    with pytest.raises(OfflineError, match="glue/CoLA/train.tsv is not cached and no mirror holds it"):
        prepare("cola", data_dir=tmp_path / "data", mirror=tmp_path, allow_download=False)


def test_snli_canonical_jsonl_format(tmp_path):
    rows = [
        {"gold_label": "neutral", "sentence1": "A dog runs.", "sentence2": "A dog chases a ball.", "pairID": "1"},
        {"gold_label": "-", "sentence1": "A dog runs.", "sentence2": "Something moves.", "pairID": "2"},
        {"gold_label": "entailment", "sentence1": "A dog runs.", "sentence2": "An animal moves.", "pairID": "3"},
    ]
    mirror = tmp_path / "mirror"
    (mirror / "snli_1.0").mkdir(parents=True)
    (mirror / "snli_1.0/snli_1.0_dev.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    t = build("snli", data_dir=tmp_path / "data", mirror=mirror, progress=False)
    assert list(t.examples["label"]) == ["neutral", "entailment"]  # "-" (no gold label) dropped
    assert len(t.items) == 3
    (mirror / "snli_1.0/snli_1.0_dev.jsonl").write_text(json.dumps({"premise": "x"}) + "\n")
    with pytest.raises(
        ChecksumError, match=r"snli_1.0_dev.jsonl from mirror .* is not usable: line 1: missing field\(s\)"
    ):
        build("snli", data_dir=tmp_path / "data2", mirror=mirror, progress=False)


CODWOE = [
    {"id": "en.test.1", "gloss": "a domesticated canid", "word": "dog", "pos": "noun"},
    {"id": "en.test.2", "gloss": "to follow persistently", "word": "dog", "pos": "verb"},
    {"id": "en.test.3", "gloss": "move fast on foot", "word": "run", "pos": "verb"},
    {"id": "en.test.4", "gloss": "a period of running", "word": "run", "pos": "noun"},
    {"id": "en.test.5", "gloss": "with speed", "word": "quickly", "pos": "adv"},
    {"id": "en.test.6", "gloss": "not in any vocabulary", "word": "zzyzxq", "pos": "noun"},
]


def test_codwoe_pos_fixture(tmp_path):
    f = tmp_path / "en.complete.json"
    f.write_text(json.dumps(CODWOE))
    t = build("pos", data_dir=tmp_path / "data", source_file=f, vocab="glove-50d")
    assert t.items["text"].tolist() == ["dog", "run", "quickly"]
    assert t.examples["labels"].tolist() == [["noun", "verb"], ["noun", "verb"], ["adv"]]
    assert t.meta()["n_words_not_in_vocabulary"] == 1 and t.multilabel
    csv_file = tmp_path / "en.complete.csv"
    csv_file.write_text(
        "id,gloss,word,pos\n" + "\n".join(f"{e['id']},{e['gloss']},{e['word']},{e['pos']}" for e in CODWOE) + "\n"
    )
    assert read_entries(csv_file) == [{k: e[k] for k in ("id", "gloss", "word", "pos")} for e in CODWOE]
    f.write_text(json.dumps([{"id": "en.train.1", "gloss": "x", "sgns": [0.1]}]))
    with pytest.raises(
        DataFormatError, match="lacks a 'word' or 'pos' field; the POS task needs CoDWoE's \\*complete\\* data"
    ):
        build("pos", data_dir=tmp_path / "data", source_file=f)


# WordNet ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wn():
    return WordNet.locate()


@pytest.fixture(scope="module")
def nltk_wn(wn, tmp_path_factory):
    """NLTK's own WordNet reader on the same files: the independent reference."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    nltk_data = tmp_path_factory.mktemp("nltk_data")
    root = nltk_data / "corpora" / "wordnet"
    root.mkdir(parents=True)
    for f in Path(wn.origin).iterdir():
        if f.is_file():  # copies: NLTK refuses symlinks that leave its data path
            shutil.copyfile(f, root / f.name)
    # NLTK needs the lexnames file Debian does not ship: the fixed list of lexnames(5WN).
    from isoflow.datasets.wordnet import LEXNAMES

    (root / "lexnames").write_text(
        "".join(
            f"{i:02d}\t{n}\t{ {'adj': 3, 'adv': 4, 'noun': 1, 'verb': 2}[n.split('.')[0]] }\n"
            for i, n in enumerate(LEXNAMES)
        )
    )
    nltk.data.path.insert(0, str(nltk_data))  # NLTK only reads corpora under its data path
    return WordNetCorpusReader(nltk.data.find("corpora/wordnet"), None)


WORDS = ["bank", "dog", "run", "light", "fast", "time", "world", "in", "well", "spring", "paris", "table"]


@pytest.mark.slow
def test_wordnet_matches_nltk(wn, nltk_wn):
    tag = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
    for w in WORDS:
        ours_pos = wn.parts_of_speech(w)
        ref_pos = {tag[s.pos()] for s in nltk_wn.synsets(w) if w in [lem.name().lower() for lem in s.lemmas()]}
        assert ours_pos == ref_pos, w
        ref_ss = {s.lexname() for s in nltk_wn.synsets(w, pos="n") if w in [lem.name().lower() for lem in s.lemmas()]}
        assert wn.noun_supersenses(w) == ref_ss, w
    assert wn.noun_supersenses("dog") == {"noun.animal", "noun.person", "noun.food", "noun.artifact"}


def test_supersense_and_pos_wordnet_tables(data_dir, shared_mirror):
    ss = prepared("supersense", data_dir, shared_mirror, vocab="glove-50d")
    assert len(ss.items) == 2_275 and ss.multilabel
    assert set(ss.label_names) <= set(NOUN_SUPERSENSES) and len(ss.label_names) == 26
    pw = prepared("pos-wordnet", data_dir, shared_mirror, vocab="glove-50d")
    assert len(pw.items) == 11_462 and pw.label_names == ["adj", "adv", "noun", "verb"]
    labels = dict(zip(pw.items["text"], pw.examples["labels"]))
    # Exact lemma match, no morphological reduction: "said" is WordNet's adjective, not the verb "say".
    assert labels["said"] == ["adj"] and labels["run"] == ["noun", "verb"]


@pytest.mark.slow
def test_supersense_user_wordlist(tmp_path, shared_mirror):
    t = build("supersense", data_dir=tmp_path, vocab="glove-50d", wordlist=["dog", "bank", "dog", "idea"])
    assert t.items["text"].tolist() == ["dog", "bank", "idea"]
    assert t.examples["labels"].iloc[2] == ["noun.cognition", "noun.communication"]
    with pytest.raises(
        DataFormatError,
        match=r"2 word\(s\) of the word list are not WordNet 3.0 noun lemmas, e.g. \['quickly', 'dogs'\]",
    ):
        build("supersense", data_dir=tmp_path, vocab="glove-50d", wordlist=["dog", "quickly", "dogs"])
    with pytest.raises(DataFormatError, match="not in the vocabulary of glove-50d"):
        build("supersense", data_dir=tmp_path, vocab="glove-50d", wordlist=["dog", "qwzxvbn"])


def test_wordnet_bad_directory(tmp_path):
    with pytest.raises(DataFormatError, match="not a WordNet database directory"):
        WordNet.locate(tmp_path)


def test_write_task_atomic_replaces(tmp_path):
    t1 = build_task("toy", ["a", "b", "a"], ["x", "y", "x"])
    out = write_task(t1, tmp_path / "toy")
    t2 = build_task("toy", ["c", "d"], ["x", "y"])
    write_task(t2, out)
    assert read_task(out).items["text"].tolist() == ["c", "d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy"]
    with pytest.raises(FileNotFoundError, match="run `isoflow prepare` first"):
        read_task(tmp_path / "nothing")


def test_wordnet_from_nltk_zip_via_mirror(tmp_path, wn, monkeypatch):
    # No system WordNet: isoflow fetches NLTK's corpora/wordnet.zip (here from a mirror built from the same files).
    from isoflow.datasets import wordnet as wordnet_mod

    mirror = tmp_path / "mirror"
    (mirror / "nltk_data/corpora").mkdir(parents=True)
    with zipfile.ZipFile(mirror / "nltk_data/corpora/wordnet.zip", "w") as zf:
        for f in Path(wn.origin).iterdir():
            if f.name.startswith(("index.", "data.")):
                zf.write(f, f"wordnet/{f.name}")
    monkeypatch.setattr(wordnet_mod, "SYSTEM_DIRS", ())
    monkeypatch.delenv("ISOFLOW_WORDNET", raising=False)
    from_zip = WordNet.locate(cache=tmp_path / "raw", mirror=mirror)
    assert from_zip.origin.endswith("nltk_data/corpora/wordnet.zip")
    for w in WORDS:
        assert from_zip.noun_supersenses(w) == wn.noun_supersenses(w) and from_zip.parts_of_speech(
            w
        ) == wn.parts_of_speech(w)
    with pytest.raises(Exception, match="no mirror holds it"):
        WordNet.locate(cache=tmp_path / "raw2", mirror=tmp_path / "nowhere")


def test_supersense_unambiguous_rule(tmp_path, shared_mirror):
    """The word list closer to a curated one: no stop words, nouns only, at most two supersenses (documented rule)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from isoflow.datasets.wordnet import WordNet

    t = read_task(
        prepare(
            "supersense-unambiguous",
            data_dir=tmp_path,
            mirror=shared_mirror,
            vocab="glove-50d",
            n_words=300,
            progress=False,
        )
    )
    wn = WordNet.locate(cache=tmp_path / "raw", mirror=shared_mirror)
    words = t.items["text"].tolist()
    assert len(words) == 300 and not set(words) & ENGLISH_STOP_WORDS
    assert all(wn.parts_of_speech(w) == {"noun"} and 1 <= len(wn.noun_supersenses(w)) <= 2 for w in words)
    plain = read_task(
        prepare("supersense", data_dir=tmp_path, mirror=shared_mirror, vocab="glove-50d", n_words=300, progress=False)
    )
    distinct = lambda task: len({tuple(x) for x in task.examples["labels"]})  # noqa: E731
    assert distinct(t) < distinct(plain)  # fewer label sets: less polysemous
