"""CKA between the seeds of one fine-tuning weight (isoflow.finetune.seed_floor) against an independent computation
(test_similarity's Gram-matrix CKA, in NumPy) on states files written as runs write them; what the files must agree on;
the report's table and its rule."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from test_similarity import gram_cka

from isoflow.finetune.seed_floor import floor_table, seed_floor, write_states

ARM = {"task": "polarity", "model": "tiny-bert", "reg": "istar", "istar_lambda": 0.0, "cosreg_weight": 0.0}
N, D, LAYERS = 40, 6, 3


def states_of(seed: int, rng: np.random.Generator, pretrained: list[np.ndarray], **settings) -> dict:
    """A run's states: the pretrained layers shared by every seed, the fine-tuned ones moved by the seed; the first
    token of each 'sequence' of 8 at position 0."""
    moved = [p + (0.3 + 0.4 * layer) * rng.normal(size=p.shape) for layer, p in enumerate(pretrained)]
    if seed == 2:  # a massive token in one seed's fine-tuned states only (the pretrained ones have theirs: written)
        moved[2][13] += 60.0
    return {
        "pretrained": [torch.tensor(p, dtype=torch.float32) for p in pretrained],
        "layers": [torch.tensor(m, dtype=torch.float32) for m in moved],
        "past_first": torch.tensor([i % 8 != 0 for i in range(N)]),
        "ids": torch.arange(N) % 11,
        "settings": {**ARM, "seed": seed, **settings},
    }


def written(tmp_path, seeds=(0, 1, 2), **settings) -> list:
    rng = np.random.default_rng(0)
    pretrained = [rng.normal(size=(N, D)) * np.logspace(0, -1, D) + 2.0 for _ in range(LAYERS)]
    pretrained[1][5] += 60.0  # a sink past the first position, as SmolLM2's second positions of a few sentences
    paths = []
    for seed in seeds:
        states = states_of(seed, rng, pretrained, **settings)
        paths.append(write_states(tmp_path / f"seed{seed}.pt", states, states.pop("settings")))
    return paths


def test_cka_between_seeds_and_to_the_pretrained_model_agree_with_gram_matrices(tmp_path):
    paths = written(tmp_path)
    floor = seed_floor(reversed(paths))  # in any order: by seed
    assert floor["seeds"] == [0, 1, 2] and floor["pairs"] == [[0, 1], [0, 2], [1, 2]]
    assert floor["tokens"] == N and floor["tokens_past_first"] == N - N // 8
    states = [torch.load(p, weights_only=False) for p in paths]
    past_first = np.arange(N) % 8 != 0
    for row in floor["layers"]:
        layer = row["layer"]
        every = [s[part][layer].double().numpy() for part in ("layers", "pretrained") for s in states]
        far = np.zeros(N, bool)  # outliers among the tokens past the first, in any of the states compared
        for x in every:
            sq = ((x[past_first] - x[past_first].mean(axis=0)) ** 2).sum(axis=1)
            far[np.flatnonzero(past_first)[sq >= 100 * np.median(sq)]] = True
        assert np.flatnonzero(far).tolist() == {0: [], 1: [5], 2: [13]}[layer]  # the planted ones, and only they
        if layer:  # a planted token holds most of its layer's variance past the first position: the set says so
            assert row["left_out_share_past_outliers"] > 0.5
        else:
            assert row["left_out_share_past_outliers"] == 0 and row["left_out_share"] == 0
        sets = (("", np.ones(N, bool)), ("_past_first", past_first), ("_past_outliers", past_first & ~far))
        wider = np.ones(N, bool)
        for suffix, keep in sets:
            assert row[f"tokens{suffix}"] == keep.sum()
            # of the previous set's tokens, the share of their centred variance the ones left out hold
            shares = [((x[wider] - x[wider].mean(axis=0)) ** 2).sum(axis=1) for x in every]
            left_out = ~keep[wider]
            assert row[f"left_out_share{suffix}"] == pytest.approx(max(q[left_out].sum() / q.sum() for q in shares))
            wider = keep
            tuned = [s["layers"][layer].double().numpy()[keep] for s in states]
            pre = [s["pretrained"][layer].double().numpy()[keep] for s in states]
            for debiased, name in ((False, ""), (True, "_debiased")):
                expected_pre = [gram_cka(p, t, debiased) for p, t in zip(pre, tuned)]
                expected_seeds = [gram_cka(tuned[i], tuned[j], debiased) for i, j in ((0, 1), (0, 2), (1, 2))]
                assert row[f"cka_pretrained{name}{suffix}"] == pytest.approx(expected_pre, rel=1e-6)
                assert row[f"cka_between_seeds{name}{suffix}"] == pytest.approx(expected_seeds, rel=1e-6)


def test_the_report_row_says_whether_every_seed_moved_farther_than_the_seeds_are_apart(tmp_path):
    floor = seed_floor(written(tmp_path))
    out = tmp_path / "cka-between-seeds.json"
    out.write_text(json.dumps(floor))
    table = floor_table([out])
    assert len(table) == LAYERS * 3 and set(table["tokens"]) == {"all", "past first", "past first, no outliers"}
    suffixes = {"all": "", "past first": "_past_first", "past first, no outliers": "_past_outliers"}
    for _, row in table.iterrows():
        source = floor["layers"][row["layer"]]
        suffix = suffixes[row["tokens"]]
        assert row["n_tokens"] == source[f"tokens{suffix}"]
        assert row["left_out_share"] == source[f"left_out_share{suffix}"]
        to_pretrained, between = source[f"cka_pretrained{suffix}"], source[f"cka_between_seeds{suffix}"]
        assert row["cka_pretrained_max"] == max(to_pretrained) and row["cka_between_seeds_min"] == min(between)
        assert row["beyond_floor"] == (max(to_pretrained) < min(between))
    # Each seed's own noise on one pretrained model: the seeds are farther from each other than from the pretrained
    # model, so no layer is beyond the floor here
    assert not table["beyond_floor"].any()
    # A hand case: every seed moved the same way (all three identical), so the floor is 1 and every layer beyond it
    same = json.loads(out.read_text())
    for row in same["layers"]:
        for key in [k for k in row if k.startswith("cka_between_seeds")]:
            row[key] = [1.0] * len(row[key])
    out.write_text(json.dumps(same))
    assert floor_table([out])["beyond_floor"].all()
    # A floor written before the third set existed still reads: its two sets
    for row in same["layers"]:
        for key in [k for k in row if k.endswith("_past_outliers")]:
            del row[key]
    out.write_text(json.dumps(same))
    assert set(floor_table([out])["tokens"]) == {"all", "past first"}


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(istar_lambda=1.0), r"seed1.pt: another weight's run than .*seed0.pt's: istar_lambda 1.0 \(not 0.0\)"),
        (dict(model="other"), r"seed1.pt: another weight's run .*: model 'other' \(not 'tiny-bert'\)"),
    ],
)
def test_states_of_another_weight_are_refused_by_name(tmp_path, change, message):
    paths = written(tmp_path, seeds=(0,))
    paths += written(tmp_path, seeds=(1,), **change)
    with pytest.raises(ValueError, match=message):
        seed_floor(paths)


def test_one_seed_other_tokens_and_other_files_are_refused(tmp_path):
    (one,) = written(tmp_path / "one", seeds=(0,))
    with pytest.raises(ValueError, match=r"needs two seeds or more, each once; got seeds \[0\]"):
        seed_floor([one])
    with pytest.raises(ValueError, match=r"needs two seeds or more, each once; got seeds \[0, 0\]"):
        seed_floor([one, one])
    paths = written(tmp_path / "two", seeds=(0, 1))
    moved = torch.load(paths[1], weights_only=False)
    moved["ids"] = moved["ids"] + 1
    torch.save(moved, paths[1])
    with pytest.raises(ValueError, match=r"seed1.pt: other tokens or layers than .*seed0.pt's"):
        seed_floor(paths)
    torch.save({"what": "else"}, paths[1])
    with pytest.raises(ValueError, match=r"seed1.pt: not a fine-tuning run's states file"):
        seed_floor(paths)
    pd.testing.assert_frame_equal(floor_table([]), pd.DataFrame())
