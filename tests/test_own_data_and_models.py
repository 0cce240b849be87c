"""Your own data, model and embeddings, as a new user brings them: a labelled file becomes a task; a local model folder
(sentence-transformers or plain Hugging Face, an encoder or GPT-2 style) encodes, is analysed per layer and is
fine-tuned, named by its folder, with no model hub; embeddings made elsewhere are imported and optimised."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from isoflow.cli import main
from isoflow.datasets import from_file, prepare, read_task
from isoflow.embed import encode, load_embeddings
from isoflow.models.spec import ModelSpec

ROWS = [
    ("A fine, funny film.", "pos"),
    ("Dull and long.", "neg"),
    ("I loved the cast", "pos"),
    ("The plot was bad", "neg"),
    ("a good story", "pos"),
    ("not funny at all", "neg"),
    ("very good actors", "pos"),
    ("it was very dull", "neg"),
] * 3


@pytest.fixture
def reviews_csv(tmp_path):
    path = tmp_path / "reviews.csv"
    pd.DataFrame(
        {
            "id": range(len(ROWS)),
            "sentence": [r[0] + f" {i}" for i, r in enumerate(ROWS)],
            "stars": [5 if r[1] == "pos" else 1 for r in ROWS],
        }
    ).to_csv(path, index=False)
    return path


def test_a_csv_becomes_a_task(reviews_csv, tmp_path):
    out = prepare(
        "reviews", data_dir=tmp_path / "data", from_file={"path": reviews_csv, "text": "sentence", "label": "stars"}
    )
    task = read_task(out)
    meta = task.meta()
    assert (
        out == tmp_path / "data/tasks/reviews" and meta["label_names"] == ["1", "5"] and meta["n_examples"] == len(ROWS)
    )
    assert meta["sources"][0]["path"] == str(reviews_csv.resolve()) and len(meta["sources"][0]["sha256"]) == 64
    assert meta["from_file"] == {"text": "sentence", "text_b": None, "label": "stars", "label_sep": None}
    assert task.items["text"].iloc[0] == "A fine, funny film. 0"


def test_pairs_multilabel_and_other_formats(tmp_path):
    pairs = tmp_path / "nli.jsonl"
    pairs.write_text(
        "\n".join(
            json.dumps({"p": f"premise {i}", "h": f"hypothesis {i % 3}", "y": ["yes", "no"][i % 2]}) for i in range(6)
        )
    )
    task = from_file("my-nli", pairs, text="p", text_b="h", label="y")
    assert task.pair and len(task.items) == 6 + 3 and task.label_names == ["no", "yes"]
    tags = tmp_path / "docs.tsv"
    tags.write_text("body\ttopics\nsport and money\tsport|money\nonly sport\tsport\nrain\tweather\n")
    task = from_file("topics", tags, text="body", label="topics", label_sep="|")
    assert task.multilabel and task.label_names == ["money", "sport", "weather"]
    pq = tmp_path / "ints.parquet"
    pd.DataFrame({"t": ["a", "b", "c"], "l": [0, 1, 1]}).to_parquet(pq)
    assert from_file("ints", pq, text="t", label="l").label_names == ["0", "1"]


@pytest.mark.parametrize(
    "content, args, message",
    [
        (
            "sentence,stars\nA,5\n",
            {"text": "text", "label": "stars"},
            r"no column 'text' \(it has: sentence, stars\); name the right one with --text",
        ),
        ("sentence,stars\nA,5\n ,1\n", {"text": "sentence", "label": "stars"}, r"row 2, column 'sentence': empty text"),
        ("sentence,stars\nA,5\nB,\n", {"text": "sentence", "label": "stars"}, r"row 2, column 'stars': no label"),
        (
            "sentence,stars\nA,5\nB,5\n",
            {"text": "sentence", "label": "stars"},
            r"column 'stars' holds a single class \('5'\)",
        ),
    ],
)
def test_bad_files_get_one_line(tmp_path, content, args, message, capsys):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    rc = main(
        [
            "prepare",
            "mine",
            "--from-file",
            str(path),
            "--text",
            args["text"],
            "--label",
            args["label"],
            "--data-dir",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and str(path) in err[0]
    assert pytest.importorskip("re").search(message, err[0]), err[0]
    assert not (tmp_path / "tasks/mine").exists()


def test_a_file_given_as_a_dataset_name_says_how(reviews_csv, capsys):
    assert main(["prepare", str(reviews_csv)]) == 2
    assert "isoflow prepare NAME --from-file" in capsys.readouterr().err


def _mean_pool(folder, texts):
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    enc = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    return ((h * m).sum(1) / m.sum(1)).numpy()


@pytest.mark.parametrize("kind", ["tiny_bert", "tiny_sentence_transformer", "tiny_gpt2"])
def test_a_local_model_encodes_a_task(kind, request, reviews_csv, tmp_path):
    folder = request.getfixturevalue(kind)
    data = tmp_path / "data"
    prepare("reviews", data_dir=data, from_file={"path": reviews_csv, "text": "sentence", "label": "stars"})
    out = encode(str(folder), "reviews", data_dir=data, device="cpu", progress=False)
    emb, meta = load_embeddings(out)
    assert (
        out == data / "embeddings" / folder.name / "reviews"
        and meta["model"] == folder.name
        and emb.shape == (len(ROWS), 32)
    )
    assert meta["source"]["path"] == str(folder) and meta["source"]["weights_sha256"]
    texts = read_task(data / "tasks/reviews").items["text"].tolist()
    ref = _mean_pool(folder, texts)
    if kind == "tiny_sentence_transformer":  # its pipeline ends with Normalize
        ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    assert np.allclose(emb, ref, atol=1e-5)
    renamed = encode(ModelSpec(str(folder), "mine"), "reviews", data_dir=data, device="cpu", progress=False)
    assert renamed == data / "embeddings/mine/reviews"


def test_a_model_folder_without_weights_is_refused(tiny_bert, tmp_path, reviews_csv):
    import shutil

    broken = tmp_path / "no-weights"
    shutil.copytree(tiny_bert, broken)
    for f in broken.glob("*.safetensors"):
        f.unlink()
    prepare(
        "reviews", data_dir=tmp_path / "data", from_file={"path": reviews_csv, "text": "sentence", "label": "stars"}
    )
    with pytest.raises(RuntimeError, match="no weight files"):
        encode(str(broken), "reviews", data_dir=tmp_path / "data", device="cpu", progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("kind, states", [("tiny_bert", 3), ("tiny_gpt2", 3)])
def test_layers_of_a_local_model(kind, states, request, tmp_path):
    folder = request.getfixturevalue(kind)
    corpus = tmp_path / "corpus.txt"
    from conftest import WORDS

    rng = np.random.default_rng(0)  # varied contexts: a word's states differ from sentence to sentence
    corpus.write_text("\n".join(" ".join(rng.choice(WORDS, size=rng.integers(5, 12))) for _ in range(120)) + "\n")
    rc = main(
        [
            "layers",
            "--model",
            str(folder),
            "--corpus",
            str(corpus),
            "--max-tokens",
            "300",
            "--results",
            str(tmp_path / "results"),
            "--k-lid",
            "5",
            "--sample-cap",
            "300",
            "--device",
            "cpu",
            "--quiet",
        ]
    )
    assert rc == 0
    out = tmp_path / "results/layers/runs" / folder.name / "corpus"
    table = pd.read_parquet(out / "layers.parquet")
    meta = json.loads((out / "meta.json").read_text())
    assert list(table["layer"]) == list(range(states)) and set(table["model"]) == {folder.name}
    assert meta["source"]["path"] == str(folder) and meta["n_points"] >= 300


@pytest.mark.slow
def test_layers_progress_and_warnings_use_the_models_name(tiny_bert, tmp_path, capsys):
    """Under a workflow the model is a folder path; the log's progress lines say the config's name."""
    from conftest import WORDS

    from isoflow.layers import LayerSettings, run_layers

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(WORDS[i : i + 6]) for i in range(0, 60, 3)) + "\n")
    settings = LayerSettings(max_tokens=100, sample_cap=100, k_lid=3)
    out = run_layers(
        ModelSpec(str(tiny_bert), "mine"), str(corpus), settings=settings, results=tmp_path, device="cpu", progress=True
    )
    lines = [line for line in capsys.readouterr().err.splitlines() if ": encoding" in line or ": measuring" in line]
    assert out.parts[-2:] == ("mine", "corpus")
    assert lines and all(line.startswith("mine: ") for line in lines), lines


def test_finetune_a_local_model(tiny_sentence_transformer, reviews_csv, tmp_path):
    from isoflow.finetune import run_finetune

    data = tmp_path / "data"
    prepare("reviews", data_dir=data, from_file={"path": reviews_csv, "text": "sentence", "label": "stars"})
    parquet, record = run_finetune(
        "reviews",
        ModelSpec(str(tiny_sentence_transformer), "tiny"),
        0,
        data_dir=data,
        results=tmp_path / "results",
        device="cpu",
        progress=False,
        istar_lambda=-1.0,
        epochs=1,
        batch_size=8,
        heldout_fraction=0.25,
        shrinkage_points=200,
    )
    info = json.loads(record.read_text())
    assert (
        parquet == tmp_path / "results/finetune/runs/reviews/tiny/istar-1/seed0.parquet"
        and info["settings"]["model"] == "tiny"
    )
    assert info["source"]["path"] == str(tiny_sentence_transformer) and len(pd.read_parquet(parquet)) == 2


def test_embeddings_made_elsewhere_are_imported_and_optimised(reviews_csv, tmp_path, capsys):
    data = tmp_path / "data"
    prepare("reviews", data_dir=data, from_file={"path": reviews_csv, "text": "sentence", "label": "stars"})
    rows = np.random.default_rng(0).normal(size=(len(ROWS), 12))
    np.savez(tmp_path / "mine.npz", vectors=rows, ids=np.arange(len(ROWS)))
    assert (
        main(
            [
                "import-embeddings",
                str(tmp_path / "mine.npz"),
                "--key",
                "vectors",
                "--task",
                "reviews",
                "--model",
                "my-encoder",
                "--data-dir",
                str(data),
            ]
        )
        == 0
    )
    emb, meta = load_embeddings(data / "embeddings/my-encoder/reviews")
    assert np.array_equal(emb, rows.astype(np.float32)) and meta["source"]["path"] == str(
        (tmp_path / "mine.npz").resolve()
    )
    assert (
        main(
            [
                "optimize",
                "--task",
                "reviews",
                "--model",
                "my-encoder",
                "--data-dir",
                str(data),
                "--steps",
                "3",
                "--results",
                str(tmp_path / "results"),
                "--quiet",
                "--istar-lambda",
                "-1",
            ]
        )
        == 0
    )
    assert (tmp_path / "results/istar/runs/reviews/my-encoder/istar-1/seed0.json").is_file()
    capsys.readouterr()
    np.save(tmp_path / "nan.npy", np.where(np.arange(len(ROWS) * 12).reshape(len(ROWS), 12) == 30, np.nan, rows))
    assert (
        main(
            [
                "import-embeddings",
                str(tmp_path / "nan.npy"),
                "--task",
                "reviews",
                "--model",
                "x",
                "--data-dir",
                str(data),
            ]
        )
        == 2
    )
    assert (
        "1 of its 24 rows hold NaN or inf values, the first is row 3 (rows counted from 1)" in capsys.readouterr().err
    )
    np.save(tmp_path / "short.npy", rows[:-1])
    assert (
        main(
            [
                "import-embeddings",
                str(tmp_path / "short.npy"),
                "--task",
                "reviews",
                "--model",
                "x",
                "--data-dir",
                str(data),
            ]
        )
        == 2
    )
    assert f"{len(ROWS) - 1} rows, but task reviews has {len(ROWS)} items" in capsys.readouterr().err
    assert not (data / "embeddings/x").exists()


def test_geometry_reads_labels_by_column_and_refuses_pickles(tmp_path, capsys):
    X = np.random.default_rng(1).normal(size=(40, 5))
    np.save(tmp_path / "X.npy", X)
    pd.DataFrame({"id": range(40), "stars": ["a", "b"] * 20}).to_csv(tmp_path / "labels.csv", index=False)
    assert (
        main(
            [
                "geometry",
                str(tmp_path / "X.npy"),
                "--labels",
                str(tmp_path / "labels.csv"),
                "--labels-key",
                "stars",
                "--metrics",
                "silhouette",
                "--format",
                "json",
            ]
        )
        == 0
    )
    from sklearn.metrics import silhouette_score

    assert json.loads(capsys.readouterr().out)["silhouette"] == pytest.approx(
        silhouette_score(X, ["a", "b"] * 20), abs=1e-9
    )
    np.savez(tmp_path / "lab.npz", labels=np.array(["a", "b"] * 20, dtype=object))
    assert (
        main(["geometry", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "lab.npz"), "--metrics", "silhouette"])
        == 2
    )
    assert "array of Python objects, which isoflow does not unpickle" in capsys.readouterr().err
