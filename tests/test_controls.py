"""The fine-tuning controls (isoflow.finetune.controls, isoflow.reporting.significance): McNemar's exact test against
scipy's binomial test, Holm's adjustment by hand, the epoch chosen on validation (never the held-out metric), seeds
paired with the plain run of the same seed, and the baseline's row."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from isoflow.finetune.controls import SELECTED_BY_VALIDATION, SELECTED_LAST, controls_table, selected_runs
from isoflow.reporting.significance import detectable_effect, holm, mcnemar, paired_over_seeds, seed_interval

LABELS = np.array([0, 1] * 10)


def test_mcnemar_is_the_exact_binomial_test_on_the_discordant_pairs():
    for b, c in ((0, 5), (3, 9), (7, 7), (12, 2), (40, 61)):
        assert mcnemar(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12)
    plain = [np.array([1, 1, 0, 0, 1], bool), np.array([0, 1, 0, 1, 1], bool)]
    other = [np.array([1, 0, 1, 1, 1], bool), np.array([1, 1, 0, 1, 0], bool)]
    test = paired_over_seeds(zip(plain, other))
    assert (test["b"], test["c"], test["examples"]) == (3, 2, 10)  # seed 0: +2 -1; seed 1: +1 -1
    assert test["accuracy_difference"] == pytest.approx(0.1) and test["p"] == pytest.approx(mcnemar(3, 2))
    with pytest.raises(ValueError, match="same examples"):
        paired_over_seeds([(plain[0], other[0][:3])])


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03, float("nan")])[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert np.isnan(holm([0.01, float("nan")])[1]) and holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def _run(folder, lam, seed, correct_by_epoch, validation=None):
    """A run's record and epochs: its predictions right where ``correct_by_epoch[e]`` says."""
    stem = folder / f"istar{lam:g}" / f"seed{seed}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for epoch, correct in enumerate(correct_by_epoch):
        pred = np.where(correct, LABELS, 1 - LABELS)
        row = {"epoch": epoch, "metric_name": "accuracy", "metric": correct.mean(), "accuracy": correct.mean()}
        row["predictions"] = pred.tolist()
        if validation is not None:
            row["validation_metric"] = validation[epoch]
        rows.append(row)
    pd.DataFrame(rows).to_parquet(stem.with_suffix(".parquet"))
    settings = {"task": "toy", "model": "m", "reg": "istar", "istar_lambda": lam, "cosreg_weight": 0.0, "seed": seed}
    record = {"settings": settings, "heldout_labels": LABELS.tolist(), "n_train": 60}
    stem.with_suffix(".json").write_text(json.dumps(record))
    return stem.with_suffix(".json")


def test_the_controls_table(tmp_path):
    rng = np.random.default_rng(0)
    right = [rng.random((3, 20)) < p for p in (0.6, 0.6, 0.8, 0.8)]
    records = [
        _run(tmp_path, 0.0, 0, right[0], validation=[0.5, 0.7, 0.6]),  # epoch 1 chosen, whatever the held-out says
        _run(tmp_path, 0.0, 1, right[1], validation=[0.5, 0.6, 0.9]),
        _run(tmp_path, 1.0, 0, right[2], validation=[0.9, 0.1, 0.1]),
        _run(tmp_path, 1.0, 1, right[3], validation=[0.2, 0.2, 0.3]),
        _run(tmp_path / "old", -1.0, 0, right[2]),  # a run made before validation splits: its last epoch
    ]
    baseline = tmp_path / "bag-of-words.json"
    baseline.write_text(
        json.dumps(
            {
                "task": "toy",
                "C": 3.0,
                "selection": "validation split",
                "metric_name": "accuracy",
                "metric": 0.7,
                "accuracy": 0.7,
                "n_heldout": 20,
            }
        )
    )
    every = tmp_path / "bag-of-words-all-training.json"  # the same on all the training examples
    record = json.loads(baseline.read_text())
    every.write_text(json.dumps({**record, "metric": 0.8, "n_train": 900}))
    table = controls_table(selected_runs(records), [every, baseline]).set_index("weight")
    assert table.loc[0.0, "epochs"] == "1 2" and table.loc[1.0, "epochs"] == "0 2"
    assert table.loc[1.0, "selection"] == SELECTED_BY_VALIDATION and table.loc[-1.0, "selection"] == SELECTED_LAST
    assert table.loc[0.0, "metric"] == pytest.approx(np.mean([right[0][1].mean(), right[1][2].mean()]))
    expected = paired_over_seeds([(right[0][1], right[2][0]), (right[1][2], right[3][2])])
    assert (table.loc[1.0, "better"], table.loc[1.0, "worse"]) == (expected["b"], expected["c"])
    assert table.loc[1.0, "p"] == pytest.approx(expected["p"]) and table.loc[1.0, "paired_seeds"] == 2
    minus = paired_over_seeds([(right[0][1], right[2][2])])  # the old run: seed 0 only, its last epoch
    assert table.loc[-1.0, "p"] == pytest.approx(minus["p"]) and table.loc[1.0, "comparisons"] == 2
    assert table.loc[1.0, "p_holm"] == pytest.approx(holm([minus["p"], expected["p"]])[1])
    assert np.isnan(table.loc[0.0, "p"])  # the plain run is not compared with itself
    # the seed as the unit: per seed, the run minus the plain run at their selected epochs, and after the last one
    selected = [right[2][0].mean() - right[0][1].mean(), right[3][2].mean() - right[1][2].mean()]
    last = [right[2][2].mean() - right[0][2].mean(), right[3][2].mean() - right[1][2].mean()]
    for when, d in (("selected", selected), ("last", last)):
        over = seed_interval(d)
        assert table.loc[1.0, f"diff_{when}"] == pytest.approx(np.mean(d))
        assert (table.loc[1.0, f"diff_{when}_low"], table.loc[1.0, f"p_seeds_{when}"]) == pytest.approx(
            (over["low"], over["p"])
        )
        assert table.loc[1.0, f"detectable_{when}"] == pytest.approx(detectable_effect(np.std(d, ddof=1), 2))
    assert np.isnan(table.loc[-1.0, "diff_selected_low"])  # one seed: no interval
    assert list(table.columns[11:13]) == ["diff_selected", "diff_selected_low"]  # the comparison the table leads with
    assert list(table.columns[3:4]) == ["n_train"]  # every row says what it trained on
    assert table.loc[1.0, "n_train"] == 60 and table.loc[-1.0, "n_train"] == 60
    rows = table[table["model"] == "bag-of-words"]
    assert list(rows["metric"]) == [0.8, 0.7] and rows["n_train"].isna().tolist() == [False, True]  # recorded or not
    row = rows.iloc[1]
    assert row["selection"] == "C = 3 by validation split" and np.isnan(row.name)


def test_the_learning_rate_is_chosen_on_validation_only(tmp_path):
    """Each candidate run read at its best validation epoch; the best wins (ties: the smaller rate); the held-out
    metric plays no part; a run without validation cannot choose."""
    from isoflow.cli import main
    from isoflow.finetune.learning_rate import choose, chosen_lr

    def candidate(lr, validation, heldout):
        stem = tmp_path / f"lr{lr:g}" / "seed0"
        stem.parent.mkdir(parents=True)
        pd.DataFrame({"epoch": range(len(validation)), "validation_metric": validation, "metric": heldout}).to_parquet(
            stem.with_suffix(".parquet")
        )
        stem.with_suffix(".json").write_text(json.dumps({"settings": {"lr": lr}}))
        return stem.with_suffix(".json")

    runs = [
        candidate(1e-5, [0.5, 0.6, 0.7], [0.9, 0.9, 0.9]),  # the best held-out: never read
        candidate(3e-5, [0.5, 0.8, 0.75], [0.1, 0.1, 0.1]),
        candidate(1e-4, [0.5, 0.8, 0.6], [0.5, 0.5, 0.5]),  # ties 3e-5 at 0.8: the smaller rate wins
    ]
    choice = choose(runs)
    assert choice["lr"] == 3e-5 and choice["candidates"]["3e-05"] == {
        "validation_metric": 0.8,
        "epoch": 1,
        "record": str(runs[1]),
    }
    assert main(["finetune-lr", *map(str, runs), "--out", str(tmp_path / "chosen.json")]) == 0
    assert chosen_lr(tmp_path / "chosen.json")[0] == 3e-5
    old = tmp_path / "old"
    old.mkdir()
    pd.DataFrame({"epoch": [0, 1], "metric": [0.5, 0.6]}).to_parquet(old / "seed0.parquet")
    (old / "seed0.json").write_text(json.dumps({"settings": {"lr": 1e-3}}))
    with pytest.raises(ValueError, match="no validation split"):
        choose([old / "seed0.json"])


def test_the_seed_level_interval_is_scipys_one_sample_t():
    from scipy.stats import ttest_1samp

    d = [-0.021, -0.023, 0.004, 0.011, -0.002]
    got, theirs = seed_interval(d), ttest_1samp(d, 0.0)
    ci = theirs.confidence_interval(0.95)
    assert (got["low"], got["high"], got["p"]) == pytest.approx((ci.low, ci.high, theirs.pvalue), rel=1e-12)
    assert got["seeds"] == 5 and np.isnan(seed_interval([0.01])["p"])


def test_the_detectable_effect_is_detected_with_the_power_asked_in_simulation():
    """At the effect detectable_effect gives for 6 seeds, 20,000 simulated sweeps of normal per-seed differences reject
    at 5 % about 80 % of the time (binomial std 0.3 %); at half of it, far less."""
    from scipy.stats import ttest_1samp

    from isoflow.reporting.significance import seeds_for

    sd, n = 0.0096, 6
    effect = detectable_effect(sd, n)
    rng = np.random.default_rng(0)
    for size, (low, high) in ((effect, (0.79, 0.81)), (effect / 2, (0.2, 0.35))):
        sweeps = rng.normal(size, sd, size=(20_000, n))
        rejected = (ttest_1samp(sweeps, 0.0, axis=1).pvalue < 0.05).mean()
        assert low < rejected < high
    assert seeds_for(sd, effect) == n and seeds_for(sd, effect * 0.99) == n + 1


def test_mcnemar_seed_by_seed_pairs_each_run_with_the_plain_run_of_its_seed():
    """finetune_mcnemar_seeds: one exact McNemar test per run against λ = 0 of its seed (SciPy's binomial test on the
    discordant examples, by hand), Holm over the task × model's tests; a run without predictions gets no row."""
    from isoflow.finetune.controls import mcnemar_by_seed
    from isoflow.reporting.significance import holm

    rng = np.random.default_rng(0)
    plain = {seed: rng.random(200) < 0.8 for seed in range(3)}
    other = {seed: np.where(rng.random(200) < 0.1 * (seed + 1), ~plain[seed], plain[seed]) for seed in range(3)}
    rows = [dict(task="t", model="m", reg="istar", weight=0.0, seed=s, epoch=2, correct=plain[s]) for s in range(3)]
    rows += [dict(task="t", model="m", reg="istar", weight=-1.0, seed=s, epoch=3, correct=other[s]) for s in range(3)]
    rows.append(dict(task="t", model="m", reg="cosreg", weight=1.0, seed=0, epoch=1, correct=None))
    table = mcnemar_by_seed(pd.DataFrame(rows))
    assert list(table.seed) == [0, 1, 2] and (table.epoch == 3).all() and (table.examples == 200).all()
    expected = []
    for s in range(3):
        b, c = int((other[s] & ~plain[s]).sum()), int((plain[s] & ~other[s]).sum())
        assert (table.better.iloc[s], table.worse.iloc[s]) == (b, c)
        expected.append(binomtest(b, b + c, 0.5).pvalue)
    assert table.p.tolist() == pytest.approx(expected)
    assert table.p_holm.tolist() == pytest.approx(holm(expected))
