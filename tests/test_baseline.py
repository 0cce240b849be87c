"""The bag-of-words baseline (isoflow.finetune.baseline): a hand case a word decides, the regularisation chosen on the
validation split (or by cross-validation on the training data) and never on the held-out set, pairs, and the command
on a fine-tuning sweep's own splits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoflow.finetune.baseline import C_GRID, bag_of_words
from isoflow.finetune.data import Examples

GOOD, BAD = "fine good great lovely superb".split(), "awful bad dull poor weak".split()
FILLER = "the a film plot story cast it was is".split()


def examples(n: int, seed: int, pair: bool = False) -> Examples:
    """Sentences of filler words and one word that decides the label (plus 10 % of labels flipped: noise)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a = [" ".join([*rng.choice(FILLER, 4), rng.choice(GOOD if label else BAD)]) for label in y]
    noisy = np.where(rng.random(n) < 0.1, 1 - y, y)
    b = [" ".join(rng.choice(FILLER, 3)) for _ in range(n)] if pair else None
    return Examples(a, b, noisy, ["neg", "pos"])


def test_a_word_that_decides_the_label_is_learned():
    result = bag_of_words("toy", examples(300, 0), examples(100, 1), examples(60, 2))
    truth = examples(100, 1)
    clean = np.array([any(w in s.split() for w in GOOD) for s in truth.a]).astype(int)
    pred = np.array(result["predictions"])
    assert (pred == clean).mean() >= 0.9  # it learned the word, not the noise
    assert result["accuracy"] == pytest.approx((pred == truth.y).mean()) and result["metric_name"] == "accuracy"
    assert result["selection"] == "validation split" and result["C"] in C_GRID
    assert set(result["selection_scores"]) == {f"{C:g}" for C in C_GRID}
    assert result["heldout_labels"] == truth.y.tolist() and result["n_validation"] == 60


def test_the_held_out_labels_are_never_read_to_choose():
    train, validation, heldout = examples(300, 0), examples(60, 2), examples(100, 1)
    flipped = Examples(heldout.a, None, 1 - heldout.y, heldout.label_names)
    for val in (validation, None):  # by validation, and by cross-validation on the training data
        one, other = bag_of_words("toy", train, heldout, val), bag_of_words("toy", train, flipped, val)
        assert one["C"] == other["C"] and one["predictions"] == other["predictions"]
        assert one["selection_scores"] == other["selection_scores"]
        assert one["accuracy"] == pytest.approx(1 - other["accuracy"])
    assert bag_of_words("toy", train, heldout)["selection"] == "5-fold cross-validation on the training data"


def test_pairs_and_the_task_metric():
    result = bag_of_words("glue/mrpc", examples(200, 3, pair=True), examples(80, 4, pair=True), examples(40, 5, True))
    assert result["metric_name"] == "f1" and 0.5 < result["metric"] <= 1.0


def test_the_command_uses_the_sweeps_splits(tmp_path):
    import pandas as pd

    from isoflow.cli import main

    ex = examples(400, 6)
    pd.DataFrame({"sentence": ex.a, "label": np.array(["neg", "pos"])[ex.y]}).to_csv(tmp_path / "toy.csv", index=False)
    where = ["--data-dir", str(tmp_path / "data")]
    assert (
        main(
            [
                "prepare",
                "toy",
                "--from-file",
                str(tmp_path / "toy.csv"),
                "--text",
                "sentence",
                "--label",
                "label",
                *where,
            ]
        )
        == 0
    )
    args = ["finetune-baseline", "--task", "toy", "--heldout-fraction", "0.2", "--max-train", "200", *where]
    assert main([*args, "--results", str(tmp_path / "results")]) == 0
    record = json.loads((tmp_path / "results/finetune/runs/toy/bag-of-words.json").read_text())
    assert record["section"] == "finetune-baseline" and record["complete"]
    assert record["held_out"]["n"] == 80 and record["validation"]["n"] == 32 and record["n_train"] == 200
    assert record["n_heldout"] == 80 == len(record["predictions"])
