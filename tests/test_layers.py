"""Cai et al. across layers: every per-layer metric against a brute-force computation, the K = 1 rule, special
tokens, streaming (same as all in memory), the corpora, bad input, and the workflow section."""

from __future__ import annotations

import json
import re
import shutil
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import assert_frames_agree_across_threads, assert_one_record_schema, config_refusals, sh
from IsoScore.IsoScore import IsoScore
from sklearn.neighbors import NearestNeighbors

from isoflow import corpora
from isoflow.cli import main
from isoflow.layers import LayerSettings, compare, layer_metrics, report, run_layers
from isoflow.layers.encoder import batches, count_points, hidden_state_shape, load_encoder, padded_positions
from isoflow.layers.measure import cap_per_type
from isoflow.layers.store import LayerStore
from isoflow.models import ModelUnavailableError
from isoflow.models.resolve import resolve_model
from isoflow.models.spec import ModelSpec

# ----- brute-force references -----------------------------------------------------------------------------------------


def unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def brute_s_inter(X, types):
    """E over distinct type pairs of cos(one instance of t, one instance of t'), averaging over every choice."""
    U = unit(X)
    names = sorted(set(types))
    total, pairs = 0.0, 0
    for a in names:
        for b in names:
            if a != b:
                total += (U[types == a] @ U[types == b].T).mean()
                pairs += 1
    return total / pairs


def brute_s_intra(X, types):
    U = unit(X)
    means = []
    for t in sorted(set(types)):
        V = U[types == t]
        if len(V) >= 2:
            G = V @ V.T
            means.append(G[~np.eye(len(V), dtype=bool)].mean())
    return float(np.mean(means))


def brute_mean_cos(X):
    U = unit(X)
    G = U @ U.T
    return G[~np.eye(len(U), dtype=bool)].mean()


def brute_lid(X, k):
    d, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    r = d[:, 1:]
    return float(np.mean(-1.0 / np.mean(np.log(r / r[:, -1:]), axis=1)))


@pytest.fixture(scope="module")
def small_layer():
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=12.0, size=(3, 6))
    which = rng.integers(0, 3, 180)
    X = centres[which] + rng.normal(size=(180, 6)) * [1.0, 0.5, 2.0, 1.0, 0.3, 1.5] + 2.0
    types = np.array([f"t{i}" for i in rng.integers(0, 25, 180)], dtype=object)
    return X, types


def test_every_metric_against_brute_force(small_layer):
    X, types = small_layer
    s = LayerSettings(sample_cap=10_000, k_max=5, k_lid=10, max_per_type=1000, seed=0)
    row, extra = layer_metrics(X, types, s)
    assert extra["sample"] is None  # 180 points < cap: all of them
    assert row["n_points"] == 180 and row["n_types"] == len(set(types))
    assert row["s_inter"] == pytest.approx(brute_s_inter(X, types), abs=1e-10)
    assert row["s_intra"] == pytest.approx(brute_s_intra(X, types), abs=1e-10)
    assert row["isoscore"] == pytest.approx(float(IsoScore(X)), abs=1e-6)
    assert row["cosine_anisotropy"] == pytest.approx(brute_mean_cos(X), abs=1e-10)
    assert row["lid_euclidean"] == pytest.approx(brute_lid(X, 10), abs=1e-8) and row["lid_points"] == 180
    assert row["lid_cosine"] == pytest.approx(brute_lid(unit(X), 10), abs=1e-8)
    d, _ = NearestNeighbors(n_neighbors=3).fit(X).kneighbors(X)
    mu = np.sort(d[:, 2] / d[:, 1])[: int(180 * 0.9)]
    F = np.arange(1, len(mu) + 1) / 180
    assert row["twonn"] == pytest.approx(np.sum(np.log(mu) * -np.log(1 - F)) / np.sum(np.log(mu) ** 2), abs=1e-8)
    # Three separated blobs: K = 3, and the centred metrics are those of X minus each cluster's mean.
    assert row["cluster_k"] == 3
    labels = extra["clusters"].numpy()
    centred = X.copy()
    for c in np.unique(labels):
        centred[labels == c] -= X[labels == c].mean(axis=0)
    assert row["s_inter_centred"] == pytest.approx(brute_s_inter(centred, types), abs=1e-10)
    assert row["s_intra_centred"] == pytest.approx(brute_s_intra(centred, types), abs=1e-10)
    assert row["isoscore_centred"] == pytest.approx(float(IsoScore(centred)), abs=1e-6)
    assert row["cosine_anisotropy_centred"] == pytest.approx(brute_mean_cos(centred), abs=1e-10)
    # The clusters reduce the anisotropy, as Cai et al. find.
    assert abs(row["cosine_anisotropy_centred"]) < abs(row["cosine_anisotropy"])


def test_the_spectrum_uniformity_and_s_inter_curve_of_a_layer(small_layer):
    """alpha-ReQ and uniformity are their metrics' values on the layer's points (uniformity on the pair sample), also
    past the first positions; the S_inter curve is S_inter over the most frequent types at each rung, the last rung
    all of them (so the row's S_inter), raw and cluster-centred."""
    from isoflow.layers.measure import pair_sample, type_rungs
    from isoflow.metrics import alpha_req, s_inter_by_type_count, uniformity

    X, types = small_layer
    positions = np.arange(len(X)) % 7
    s = LayerSettings(sample_cap=10_000, k_max=5, k_lid=10, pair_points=100, seed=0)
    row, extra = layer_metrics(X, types, s, positions)
    pick = pair_sample(len(X), s)
    assert len(pick) == 100 and row["uniformity"] == pytest.approx(uniformity(X[pick]), abs=1e-12)
    assert row["alpha_req"] == pytest.approx(alpha_req(X), abs=1e-10)
    later = X[positions > 0]
    assert row["alpha_req_nofirst"] == pytest.approx(alpha_req(later), abs=1e-10)
    # Li et al.'s α needs rank 100: this layer's dimensions are fewer, so its cell is empty, not a fit of less
    assert X.shape[1] < 100 and np.isnan(row["alpha_req_li"]) and np.isnan(row["alpha_req_li_nofirst"])
    assert row["uniformity_nofirst"] == pytest.approx(uniformity(later[pair_sample(len(later), s)]), abs=1e-12)
    curve = pd.DataFrame(extra["types"])
    n_types = len(set(types))
    assert list(curve["n_types"]) == type_rungs(n_types) == [n_types]  # 25 types: below the first rung of 125
    assert curve["s_inter"].iloc[-1] == pytest.approx(row["s_inter"], abs=1e-12)
    assert curve["s_inter_centred"].iloc[-1] == pytest.approx(row["s_inter_centred"], abs=1e-12)
    assert type_rungs(600) == [125, 250, 500, 600] and type_rungs(250) == [125, 250] and type_rungs(1) == []
    many = np.array([f"w{i}" for i in np.random.default_rng(1).zipf(1.3, size=4000) % 700], dtype=object)
    Y = np.random.default_rng(2).normal(size=(4000, 5)) + 1.0
    _, extra = layer_metrics(Y, many, LayerSettings(sample_cap=500, k_max=3, k_lid=10, kmeans_samples=1), None)
    curve = pd.DataFrame(extra["types"])
    rungs = type_rungs(len(set(many)))
    assert list(curve["n_types"]) == rungs and len(rungs) > 3
    assert np.allclose(curve["s_inter"], s_inter_by_type_count(Y, many, rungs), atol=1e-12)


def test_lid_and_twonn_of_a_layer_whose_states_repeat_are_the_distinct_states(small_layer):
    """A token's state repeats wherever it depends on the token alone (layer 0; a causal LM's first tokens in every
    layer): LID and TwoNN are the distinct states' (a repeat would be a neighbour at distance 0, LID 0)."""
    X, types = small_layer
    repeated = np.vstack([X, X[:60], X[:60]])
    s = LayerSettings(sample_cap=10_000, k_max=3, k_lid=10, seed=0)
    row, _ = layer_metrics(repeated, np.concatenate([types, types[:60], types[:60]]), s)
    assert row["n_points"] == 300 and row["lid_points"] == 180
    assert row["lid_euclidean"] == pytest.approx(brute_lid(X, 10), abs=1e-8)
    assert row["lid_cosine"] == pytest.approx(brute_lid(unit(X), 10), abs=1e-8)


def test_s_intra_keeps_at_most_max_per_type(small_layer):
    X, types = small_layer
    types = np.where(np.arange(180) < 120, "common", types).astype(object)
    row, _ = layer_metrics(X, types, LayerSettings(sample_cap=10_000, k_max=3, k_lid=5, max_per_type=30, seed=4))
    keep = cap_per_type(pd.factorize(types, sort=True)[0], 30, 4)
    assert np.bincount(pd.factorize(types, sort=True)[0][keep]).max() == 30
    assert row["s_intra"] == pytest.approx(brute_s_intra(X[keep], types[keep]), abs=1e-10)


def test_k_equals_one_below_the_silhouette_threshold():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 60))  # one isotropic blob in 60 dims: no clusters (silhouette of any split < 0.1)
    types = np.arange(300) % 40
    row, extra = layer_metrics(X, types, LayerSettings(sample_cap=10_000, k_max=6, k_lid=10))
    assert row["cluster_k"] == 1 and row["cluster_silhouette"] < 0.1
    # K = 1: the one cluster's mean is the global mean.
    assert row["s_inter_centred"] == pytest.approx(brute_s_inter(X - X.mean(axis=0), types), abs=1e-10)
    blobs = np.concatenate([X[:150] - 10.0, X[150:] + 10.0])
    assert layer_metrics(blobs, types, LayerSettings(sample_cap=10_000, k_max=6, k_lid=10))[0]["cluster_k"] == 2
    strict = LayerSettings(sample_cap=10_000, k_max=6, k_lid=10, min_silhouette=0.99)  # the threshold is a parameter
    assert layer_metrics(blobs, types, strict)[0]["cluster_k"] == 1


def test_k_decision_and_its_spread_over_samples():
    """Three separated blobs: every sample finds them; the silhouettes per sample are scikit-learn's of the true
    partition on that sample (K-means recovers it), and their mean, lowest and highest make the decision."""
    from sklearn.metrics import silhouette_score

    from isoflow.layers.kmeans import decide_k
    from isoflow.metrics import sample_rows

    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 900)
    X = rng.normal(scale=10.0, size=(3, 8))[truth] + rng.normal(size=(900, 8))
    d = decide_k(torch.from_numpy(X), range(2, 6), sample_cap=400, samples=3, starts=2, seed=5)
    expected = [
        silhouette_score(X[idx.numpy()], truth[idx.numpy()]) for idx in (sample_rows(900, 400, 5 + s) for s in range(3))
    ]
    assert d.k == 3 and d.sample_k == [3, 3, 3] and d.settled and not d.rule_in_spread
    assert d.silhouette == pytest.approx(np.mean(expected), abs=1e-9)
    assert (d.low, d.high) == (pytest.approx(min(expected), abs=1e-9), pytest.approx(max(expected), abs=1e-9))
    assert len(d.scores) == 3 * 4 and d.labels.shape == (400,)
    # its arithmetic, counted: one pass over each sample's distances; every start's Lloyd iterations, each K's passes
    # m·k·d (k-means++'s and the labels' two more a start)
    work = d.work
    assert work["silhouette_products"] == 3 * 400**2 * 8
    assert 3 * 2 * 4 <= work["lloyd_iterations"] <= 3 * 2 * 4 * 300
    passes = work["lloyd_iterations"] + 2 * 3 * 2 * 4
    assert passes * 400 * 2 * 8 < work["kmeans_products"] < passes * 400 * 5 * 8


def test_first_tokens_and_clusters_are_told_apart():
    """A layer whose only split is its first tokens (far out, as an attention sink's massive activation): K = 2 with
    them, K = 1 without; the first-token cluster is named in the composition."""
    rng = np.random.default_rng(4)
    positions = np.tile(np.arange(10), 40)
    X = rng.normal(size=(400, 16))
    X[positions == 0] += 60.0
    types = np.array([f"w{i % 30}" for i in range(400)], dtype=object)
    row, extra = layer_metrics(
        X, types, LayerSettings(sample_cap=10_000, k_max=4, k_lid=5, kmeans_samples=2), positions
    )
    assert row["cluster_k"] == 2 and row["cluster_silhouette"] > 0.5 and row["cluster_settled"]
    assert row["nofirst_cluster_k"] == 1 and row["nofirst_cluster_silhouette"] < 0.1
    where, labels = extra["nofirst"]
    assert len(where) == 360 and (positions[where.numpy()] > 0).all()
    from isoflow.layers.composition import cluster_composition

    clusters = cluster_composition(extra["clusters"], types, positions)
    assert sorted(c["share_first_position"] for c in clusters) == [0.0, 1.0]


def test_outlier_dimensions_and_the_measures_without_them(small_layer):
    X, types = small_layer
    X = X.copy()
    X[:, 4] *= 80.0  # one rogue dimension
    s = LayerSettings(sample_cap=10_000, k_max=3, k_lid=10, outlier_factor=5.0, outlier_remove=2)
    row, extra = layer_metrics(X, types, s)
    a = np.abs(X).mean(axis=0)
    assert row["outlier_dims"] == " ".join(str(k) for k in np.argsort(-a) if a[k] >= 5 * np.median(a))
    assert row["outlier_count"] == len(row["outlier_dims"].split()) >= 1 and row["peak_ratio"] == pytest.approx(
        a.max() / np.median(a)
    )
    np.testing.assert_allclose(extra["dims"]["mean_abs_activation"], a, rtol=1e-12)
    U = unit(X)
    n = len(X)
    brute = [(np.outer(U[:, k], U[:, k]).sum() - (U[:, k] ** 2).sum()) / (n * (n - 1)) for k in range(X.shape[1])]
    np.testing.assert_allclose(extra["dims"]["cosine_share"], brute, atol=1e-12)
    assert sum(brute) == pytest.approx(row["cosine_anisotropy"], abs=1e-12)
    rest = np.delete(X, np.argsort(-a)[:2], axis=1)
    assert row["cosine_anisotropy_removed"] == pytest.approx(brute_mean_cos(rest), abs=1e-10)
    assert row["s_inter_removed"] == pytest.approx(brute_s_inter(rest, types), abs=1e-10)
    assert row["isoscore_removed"] == pytest.approx(float(IsoScore(rest)), abs=1e-6)
    assert row["removed_cosine_share"] == pytest.approx(sum(np.array(brute)[np.argsort(-a)[:2]]) / sum(brute))

    def numpy_spectrum(points):  # from NumPy's SVD and eigenvalues, not isoflow's d x d route
        sigma = np.linalg.svd(points, compute_uv=False)
        p = sigma / sigma.sum()
        lam = np.linalg.eigvalsh(np.cov(points, rowvar=False))
        v = lam[lam > 0] / lam[lam > 0].sum()
        return {
            "effective_rank": np.exp(-(p[p > 0] * np.log(p[p > 0])).sum()),
            "variance_effective_rank": np.exp(-(v * np.log(v)).sum()),
            "participation_ratio": lam.sum() ** 2 / (lam**2).sum(),
            "stable_rank": (sigma**2).sum() / sigma[0] ** 2,
        }

    for suffix, points in (("", X), ("_removed", rest)):
        for name, value in numpy_spectrum(points).items():
            assert row[name + suffix] == pytest.approx(value, rel=1e-9), name + suffix


# ----- the encoder: special tokens, words, streaming ------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    return load_encoder(resolve_model("minilm", cache=tmp_path_factory.mktemp("raw")), device="cpu")


SENTENCES = [
    ["The", "jury", "praised", "the", "administration", "."],
    ["Unbelievably", ",", "it", "rained", "."],
    ["Short", "one"],
]


def test_special_tokens_are_excluded_and_counted(minilm):
    assert minilm.n_states == 7 and minilm.dim == 384
    (batch,) = list(batches(minilm, SENTENCES, batch_size=8))
    layers, types, n_special, positions = batch.layers, batch.types, batch.n_special, batch.positions
    pieces = [minilm.tokenizer(s, is_split_into_words=True, add_special_tokens=False)["input_ids"] for s in SENTENCES]
    assert len(types) == sum(map(len, pieces)) == sum(count_points(minilm, s) for s in SENTENCES)
    assert n_special == 2 * len(SENTENCES)  # [CLS] and [SEP] of each sentence; padding is not counted either
    # the forward pass computes every sentence at the longest one's length, specials included
    lengths = [len(p) + 2 for p in pieces]
    assert batch.n_positions == len(SENTENCES) * max(lengths) == padded_positions(minilm, SENTENCES, batch_size=8)
    assert padded_positions(minilm, SENTENCES, batch_size=2) == 2 * max(lengths[:2]) + lengths[2]
    assert "[CLS]" not in types and "[SEP]" not in types and "[PAD]" not in types
    assert types == minilm.tokenizer.convert_ids_to_tokens([i for p in pieces for i in p])
    assert batch.token_ids.tolist() == [i for p in pieces for i in p]
    assert all(layer.shape == (len(types), 384) for layer in layers) and len(layers) == 7
    assert positions.tolist() == [
        i for p in pieces for i in range(len(p))
    ]  # 0 = a sentence's first piece, [CLS] excluded
    # Padding does not change a sentence's states: alone or in a batch, the same numbers.
    (alone,) = list(batches(minilm, SENTENCES[2:], batch_size=8))
    np.testing.assert_allclose(alone.layers[6], layers[6][-len(pieces[2]) :], atol=1e-5)
    # Words: one point per word, the mean of its pieces.
    (words,) = list(batches(minilm, SENTENCES, batch_size=8, mode="words"))
    wl, wtypes, wpositions = words.layers, words.types, words.positions
    assert wtypes == [w for s in SENTENCES for w in s] and wl[3].shape == (13, 384)
    assert wpositions.tolist() == [i for s in SENTENCES for i in range(len(s))]
    n_first = len(minilm.tokenizer(["Unbelievably"], is_split_into_words=True, add_special_tokens=False)["input_ids"])
    start = len(pieces[0])
    np.testing.assert_allclose(wl[3][6], layers[3][start : start + n_first].mean(axis=0), atol=1e-5)
    # The last token: one point per sentence, the state of its last piece (Li et al.'s points), typed as that piece.
    (last,) = list(batches(minilm, SENTENCES, batch_size=8, mode="last-token"))
    ends = np.cumsum([len(p) for p in pieces]) - 1
    assert last.types == [types[i] for i in ends] and last.positions.tolist() == [len(p) - 1 for p in pieces]
    assert last.token_ids.tolist() == [p[-1] for p in pieces] and last.n_special == n_special
    for layer in (0, 6):
        np.testing.assert_allclose(last.layers[layer], layers[layer][ends], atol=1e-5)
    assert [count_points(minilm, s, "last-token") for s in SENTENCES] == [1, 1, 1]


@pytest.mark.slow
def test_streaming_gives_the_same_result_as_all_in_memory(tmp_path, shared_mirror):
    kw = dict(
        settings=LayerSettings(max_tokens=400, k_lid=20, k_max=4),
        data_dir=tmp_path,
        mirror=shared_mirror,
        device="cpu",
        progress=False,
    )
    streamed = run_layers("minilm", "brown", out=tmp_path / "disk", stream=True, **kw)
    in_memory = run_layers("minilm", "brown", out=tmp_path / "memory", stream=False, **kw)
    a, b = (pd.read_parquet(d / "layers.parquet") for d in (streamed, in_memory))
    pd.testing.assert_frame_equal(a, b)
    meta = json.loads((streamed / "meta.json").read_text())
    assert_one_record_schema(meta, "layers")
    assert meta["streamed"] and not json.loads((in_memory / "meta.json").read_text())["streamed"]
    assert (
        meta["n_points"] == a["n_points"].iloc[0] >= 400
        and meta["special_tokens_excluded"] == 2 * meta["sentences_used"]
    )
    assert list(a["layer"]) == list(range(7)) and not list(tmp_path.glob(".layer-states.*"))  # the states are gone
    for name in ("types.parquet", "cka.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(streamed / name), pd.read_parquet(in_memory / name))
        (in_memory / name).unlink()  # as a run made before these files
    _, _, _, _, extra = report.load([streamed, in_memory])
    assert set(extra["types"]["model"]) == set(extra["cka"]["model"]) == {"minilm"}
    assert len(extra["cka"]) == 2 * 7 * 7  # the streamed run's only
    _, _, _, _, extra = report.load([in_memory])
    assert extra["types"].empty and extra["cka"].empty and "n_types" in extra["types"]
    assert compare.matched_table(extra["types"]).empty
    cka = pd.read_parquet(streamed / "cka.parquet")
    assert set(cka["subset"]) == {"all", "no first token"} and len(cka) == 2 * 7 * 7
    for _, g in cka.groupby("subset"):
        for column in ("cka", "cka_debiased"):
            grid = g.pivot(index="layer_a", columns="layer_b", values=column).to_numpy()
            assert np.allclose(np.diag(grid), 1.0) and np.allclose(grid, grid.T, atol=1e-12)
    everything = cka[cka.subset == "all"]
    assert (everything["n_points"] == meta["n_points"]).all()  # fewer points than pair_points: all of them
    # neighbouring layers are more alike than the first and the last
    grid = everything.pivot(index="layer_a", columns="layer_b", values="cka").to_numpy()
    assert grid[5, 6] > grid[0, 6]


def test_identical_points_tie_in_the_principal_component_orderings():
    """A state that repeats (a token's at the input layer) ranks as one value on every component, wherever its copies
    sit among the rows: the orderings of a permuted copy equal the original's to rounding, not to a broken tie."""
    from isoflow.layers.pca import orderings

    g = torch.Generator().manual_seed(0)
    base = torch.randn(40, 24, generator=g, dtype=torch.float64) * torch.logspace(0, -2, 24, dtype=torch.float64)
    pick = torch.randint(0, 40, (1500,), generator=g)  # ~37 copies of each point
    points, positions = base[pick].to(torch.float32), (pick % 7).numpy()
    log_frequency = np.log(np.bincount(pick.numpy(), minlength=40)[pick.numpy()].astype(float))
    perm = torch.randperm(1500, generator=g)
    a = orderings(points, positions, log_frequency)
    b = orderings(points[perm], positions[perm.numpy()], log_frequency[perm.numpy()])
    assert a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-12) for k in a)


@pytest.mark.slow
def test_an_interrupted_analysis_resumes_where_it_stopped(tmp_path, shared_mirror, monkeypatch, caplog, capsys):
    """Stopped while measuring layer 3: the same call skips the encoding and the three measured layers, and writes
    what an uninterrupted run writes (to the rounding another thread count gives: conftest.ACROSS_THREADS), its
    record naming what it took up again and the threads those stages had; with only the carried files (another
    machine), it encodes again and measures the layers left; a call with other settings starts afresh.
    Over 60 s in a record made while OpenMP's threads waited actively (tests/conftest.py now asks a passive wait): the
    stopped run's one more thread spun beside the other worker."""
    import isoflow.layers.run as layers_run
    from isoflow.atomic import in_progress_path

    kw = dict(data_dir=tmp_path, mirror=shared_mirror, device="cpu", progress=False)
    settings = LayerSettings(max_tokens=300, k_lid=20, k_max=3)
    whole = run_layers("minilm", "brown", settings=settings, out=tmp_path / "whole", **kw)

    def agrees_with_whole(out, encoded: bool = True):  # encoded by a process of one thread more, or as the whole
        for name in ("layers", "kmeans", "clusters", "dims", "pca", "types"):
            name = f"{name}.parquet"
            assert_frames_agree_across_threads(pd.read_parquet(out / name), pd.read_parquet(whole / name),
                                               encoded=encoded)  # fmt: skip

    measure, encode = layers_run._measure_layer, layers_run._encode
    calls = {"measure": [], "encode": 0, "stop_at": 3}

    def measure_until_stopped(job, store, layer, *args):
        if layer == calls["stop_at"]:
            raise KeyboardInterrupt
        calls["measure"].append(layer)
        return measure(job, store, layer, *args)

    def counted_encode(*args):
        calls["encode"] += 1
        return encode(*args)

    monkeypatch.setattr(layers_run, "_measure_layer", measure_until_stopped)
    monkeypatch.setattr(layers_run, "_encode", counted_encode)
    out = tmp_path / "runs/minilm/brown"
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)  # the first process had other threads than the one that resumes it
    try:
        with pytest.raises(KeyboardInterrupt):
            run_layers("minilm", "brown", settings=settings, out=out, **kw)
    finally:
        torch.set_num_threads(threads)
    kept = in_progress_path(out)
    assert not out.exists() and sorted(p.name for p in kept.glob("layer*.pkl")) == [f"layer{i}.pkl" for i in range(3)]
    assert calls["encode"] == 1 and (kept / "encoded.npz").is_file()

    calls.update(measure=[], encode=0, stop_at=None)
    run_layers("minilm", "brown", settings=settings, out=out, **{**kw, "progress": True})
    assert (calls["measure"], calls["encode"]) == ([3, 4, 5, 6], 0) and not kept.exists()
    said = capsys.readouterr().err  # where its progress goes, the run says what it took up again
    assert f"minilm: encoding: done before, resumed from {kept}" in said
    assert "minilm: measuring (3 measured before, resumed): started, 7 layer" in said
    agrees_with_whole(out)
    meta = json.loads((out / "meta.json").read_text())
    earlier = {stage: threads + 1 for stage in ("encode", "layer0", "layer1", "layer2")}
    assert meta["resumed"] == {"encoding": kept.name, "layers": [0, 1, 2], "threads": earlier}
    assert meta["threads"] == threads and "resumed" not in json.loads((whole / "meta.json").read_text())

    # Carried to another machine by a saved sweep (isoflow.layers.partial.CARRIED: no states, no tokens): the tokens
    # are encoded again there and only the layers left are measured.
    from isoflow.layers.partial import CARRIED

    calls.update(stop_at=3)
    carried = tmp_path / "runs/minilm/carried"
    with pytest.raises(KeyboardInterrupt):
        run_layers("minilm", "brown", settings=settings, out=carried, **kw)
    left = in_progress_path(carried)
    for f in [f for f in left.rglob("*") if f.is_file() and not any(f.match(pattern) for pattern in CARRIED)]:
        f.unlink()
    shutil.rmtree(left / "states")
    assert sorted(p.name for p in left.iterdir()) == ["layer0.pkl", "layer1.pkl", "layer2.pkl", "what.json"]
    calls.update(measure=[], encode=0, stop_at=None)
    run_layers("minilm", "brown", settings=settings, out=carried, **kw)
    assert (calls["measure"], calls["encode"]) == ([3, 4, 5, 6], 1) and not left.exists()
    resumed = json.loads((carried / "meta.json").read_text())["resumed"]
    assert resumed == {"encoding": None, "layers": [0, 1, 2], "threads": {f"layer{i}": threads for i in range(3)}}
    agrees_with_whole(carried, encoded=False)  # encoded again here, at the whole run's threads

    # Progress left by other settings is not taken up: stopped at layer 1 both times, the second call encodes again
    # and measures layer 0 again.
    other = LayerSettings(max_tokens=300, k_lid=10, k_max=3)
    calls.update(stop_at=1)
    with pytest.raises(KeyboardInterrupt):
        run_layers("minilm", "brown", settings=settings, out=tmp_path / "again", **kw)
    calls.update(measure=[], encode=0)
    with caplog.at_level("WARNING"), pytest.raises(KeyboardInterrupt):
        run_layers("minilm", "brown", settings=other, out=tmp_path / "again", **kw)
    assert (calls["measure"], calls["encode"]) == ([0], 1) and "starting afresh" in caplog.text


def test_layer_store_reads_back_what_was_written(tmp_path):
    rng = np.random.default_rng(0)
    batches_ = [[rng.normal(size=(n, 4)).astype(np.float32) for _ in range(3)] for n in (5, 7, 2)]
    for directory in (tmp_path, None):
        with LayerStore(3, 14, 4, directory) as store:
            for b in batches_:
                store.append(b)
            for layer in range(3):
                np.testing.assert_array_equal(store.layer(layer), np.concatenate([b[layer] for b in batches_]))
            with pytest.raises(IndexError, match="layer 3 out of range 0..2"):
                store.layer(3)
    assert not list(tmp_path.iterdir())


def test_a_store_that_would_not_fit_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """The states' bytes (layers × points × dims × 4; with a sample's types' sums) against the disk's free space —
    plus what a resumed store's files hold already — or the memory available: one line naming the place, the need and
    the fixes, nothing left."""
    import shutil
    from collections import namedtuple

    from isoflow.layers import store as store_module

    assert store_module.states_bytes(33, 100_000, 4096) == 54_067_200_000  # an 8B model's every state, 100k tokens
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 3 * 14 * 4 * 4 - 1))
    where = tmp_path / "runs" / "m"
    with pytest.raises(store_module.NotEnoughSpace, match=r"need 0\.0 GB of disk \(3 layers x 14 points x 4 dims"):
        LayerStore(3, 14, 4, where)
    assert not where.exists()  # refused before its folder was made
    kept = tmp_path / "kept"
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 10**9))
    with LayerStore(3, 14, 4, kept, keep=True):  # a kept store, as an interrupted analysis leaves it
        pass
    held = sum(p.stat().st_blocks * 512 for p in kept.iterdir())
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 3 * 14 * 4 * 4 - held))
    with LayerStore(3, 14, 4, kept, keep=True) as store:  # resumed: its own files count as room
        assert store.n_points == 14
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 3 * 14 * 4 * 4 + 10**8 - 1))
    with pytest.raises(store_module.NotEnoughSpace, match=r"4 dims x 4 B, and 0\.1 GB of their types' sums\)"):
        LayerStore(3, 14, 4, tmp_path / "sampled", sums_bytes=10**8)  # a run keeping its sample: its types' sums too
    assert not (tmp_path / "sampled").exists()
    monkeypatch.setattr(store_module, "available_memory", lambda: 100)
    with pytest.raises(store_module.NotEnoughSpace, match="GB of memory .* keep them on disk"):
        LayerStore(1, 14, 4)


# ----- corpora --------------------------------------------------------------------------------------------------------


def test_brown_from_the_mirror(tmp_path, shared_mirror):
    sentences = corpora.load("brown", tmp_path, shared_mirror, allow_download=False)
    assert len(sentences) == 57_340 and sum(map(len, sentences)) == 1_161_192  # NLTK's counts
    assert sentences[0][:4] == ["The", "Fulton", "County", "Grand"]
    chosen = corpora.sample(sentences, 1000, 3, len)
    assert 1000 <= sum(map(len, chosen)) < 1000 + max(map(len, chosen))
    assert chosen == corpora.sample(sentences, 1000, 3, len) != corpora.sample(sentences, 1000, 4, len)


def test_wikitext_through_its_canonical_zip(tmp_path, monkeypatch):
    raw = (
        " \n = Valkyria Chronicles = \n \n Senjō no Valkyria is a game . It was released in 2011 ! Why ? \n \n"
        " = = Gameplay = = \n Play it .\n"
    )
    site = tmp_path / "site"
    site.mkdir()
    with zipfile.ZipFile(site / "wikitext-2-raw-v1.zip", "w") as zf:
        zf.writestr("wikitext-2-raw/wiki.train.raw", raw)
    from dataclasses import replace

    monkeypatch.setitem(
        corpora.CORPORA, "wikitext-2", replace(corpora.WIKITEXT2, urls=((site / "wikitext-2-raw-v1.zip").as_uri(),))
    )
    sentences = corpora.load("wikitext-2", tmp_path / "cache")
    assert sentences == [
        ["Senjō", "no", "Valkyria", "is", "a", "game", "."],
        ["It", "was", "released", "in", "2011", "!"],
        ["Why", "?"],
        ["Play", "it", "."],
    ]
    assert (tmp_path / "cache/wikitext-2/wiki.train.raw").is_file()


def test_ptb_through_its_canonical_url(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "ptb.train.txt").write_text(
        " aer banknote berlitz <unk> calloway \n pierre <unk> N years old will join the board \n"
    )
    from dataclasses import replace

    monkeypatch.setitem(corpora.CORPORA, "ptb", replace(corpora.PTB, urls=((site / "ptb.train.txt").as_uri(),)))
    sentences = corpora.load("ptb", tmp_path / "cache")
    assert sentences == [
        ["aer", "banknote", "berlitz", "<unk>", "calloway"],
        ["pierre", "<unk>", "N", "years", "old", "will", "join", "the", "board"],
    ]
    (site / "ptb.train.txt").write_text("This is not PTB.\n")
    with pytest.raises(Exception, match="no <unk> token"):
        corpora.load("ptb", tmp_path / "other-cache")


def test_orderings_are_spearmans_rho_of_each_principal_component():
    """|ρ| of the points' coordinates on PC1-3 (scikit-learn's PCA, the independent reference) with position and log
    frequency, and each component's share of the variance."""
    from scipy.stats import spearmanr
    from sklearn.decomposition import PCA

    from isoflow.layers.pca import orderings

    rng = np.random.default_rng(0)
    position = rng.integers(0, 50, 400)
    frequency = rng.integers(1, 1000, 400)
    X = rng.normal(size=(400, 6))
    X[:, 0] += 0.5 * position  # position along the widest axis: PC1
    X[:, 1] -= 3.0 * np.log(frequency)  # frequency along the next
    row = orderings(torch.from_numpy(X), position, np.log(frequency))
    pca = PCA(3).fit(X)
    coords = pca.transform(X)
    for i, pc in enumerate(("pc1", "pc2", "pc3")):
        assert row[f"{pc}_variance"] == pytest.approx(pca.explained_variance_ratio_[i], abs=1e-12)
        for what, values in (("position", position), ("log_frequency", np.log(frequency))):
            expected = abs(spearmanr(coords[:, i], values).statistic)
            assert row[f"{pc}_rho_{what}"] == pytest.approx(expected, abs=1e-12)
    assert row["pc1_rho_position"] > 0.9 and row["pc2_rho_log_frequency"] > 0.85
    static = orderings(torch.from_numpy(X), None, np.log(frequency))  # static vectors: no position
    assert np.isnan(static["pc1_rho_position"]) and static["pc2_rho_log_frequency"] == row["pc2_rho_log_frequency"]


# ----- bad input ------------------------------------------------------------------------------------------------------


def test_bad_corpora_and_options(tmp_path, shared_mirror, capsys):
    from isoflow.cli import main

    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\x01\x02binary")
    common = ["--data-dir", str(tmp_path), "--mirror", str(shared_mirror), "--device", "cpu", "--quiet"]
    cases = [
        (["--model", "minilm", "--corpus", str(empty)], "empty.txt: the corpus is empty"),
        (["--model", "minilm", "--corpus", str(binary)], "model.bin: is not a text file"),
        (["--model", "minilm", "--corpus", "penn"], "unknown corpus 'penn'"),
        (
            ["--model", "minilm", "--corpus", "brown", "--max-tokens", "300", "--view-layer", "9"],
            "view layer 9 is out of range: minilm has layers 0..6",
        ),
        (["--model", "bert-base-uncased", "--corpus", "brown"], "cannot be reached"),
    ]
    for argv, message in cases:
        rc = main(["layers", *argv, *common, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert rc == 2 and message in err and "Traceback" not in err, (argv, err)
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_a_measurement_the_corpus_is_too_small_for_is_left_empty_and_named(tmp_path, shared_mirror, capsys):
    """Too few points for LID (and a repetitive corpus for TwoNN): the job goes on, those cells are NaN, the table says
    why, and a warning names the model, the corpus and the layer."""
    corpus = tmp_path / "tiny-notes.txt"
    corpus.write_text("\n".join(["the cat sat on the mat ."] * 8) + "\n")
    rc = main(
        [
            "layers",
            "--model",
            "glove-50d",
            "--corpus",
            str(corpus),
            "--corpus-name",
            "notes",
            "--k-lid",
            "20",
            "--k-max",
            "2",
            "--data-dir",
            str(tmp_path),
            "--mirror",
            str(shared_mirror),
            "--results",
            str(tmp_path / "r"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 0, err
    table = pd.read_parquet(tmp_path / "r/layers/runs/glove-50d/notes/layers.parquet")
    assert table["lid_euclidean"].isna().all() and table["twonn"].isna().all() and set(table["corpus"]) == {"notes"}
    assert "fewer than LID's 20 neighbours + 1" in table["notes"].iloc[0]
    assert "isoflow layers: warning: glove-50d x notes, layer 0: LID, TwoNN: 6 distinct points" in err


def test_a_model_without_hidden_states_is_refused(minilm):
    class NoStates(torch.nn.Module):
        def forward(self, **inputs):
            return type("Out", (), {"hidden_states": None})()

    with pytest.raises(ModelUnavailableError, match="returns no hidden states"):
        hidden_state_shape(NoStates(), minilm.tokenizer, "nostates", "cpu")


def test_static_row_uses_the_corpus_words(tmp_path, shared_mirror):
    out = run_layers(
        "glove-50d",
        "brown",
        settings=LayerSettings(max_tokens=2000, k_lid=20, k_max=4),
        data_dir=tmp_path,
        results=tmp_path / "results",
        mirror=shared_mirror,
        device="cpu",
        progress=False,
    )
    table = pd.read_parquet(out / "layers.parquet")
    meta = json.loads((out / "meta.json").read_text())
    assert (
        len(table) == 1 and meta["static"] and table["n_points"].iloc[0] == table["n_types"].iloc[0] == meta["n_points"]
    )
    assert np.isnan(table["s_intra"].iloc[0])  # one instance per type: no intra-type pairs
    # one word, one point: its S_inter curve ranks the words by their corpus counts, ending at all of them
    curve = pd.read_parquet(out / "types.parquet")
    assert list(curve["n_types"])[-1] == meta["n_points"] and curve["s_inter"].iloc[-1] == table["s_inter"].iloc[0]
    assert pd.read_parquet(out / "cka.parquet").empty  # one "layer": no pair of layers


# ----- the workflow section -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_workflow_layers_section_plans(tmp_path, plan_checkout):
    where = ["--config", f"data_dir={tmp_path}/data", f"results_dir={tmp_path}/results"]
    out = sh(["snakemake", "-n", "layers", *where], plan_checkout).stdout
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", out, re.M)}
    assert (
        counts["layers_run"] == (4 + 1) * 2 and counts["layers_report"] == 1
    )  # (minilm, mpnet, 2 plain LMs, glove) x 2 corpora
    assert config_refusals("layers={'models': ['minilm'], 'corpora': ['penn']}") == [
        "layers.corpora names 'penn', which is neither a built-in corpus nor declared under own; add it to own or fix "
        "the name"
    ]
    cross = "layers={'models': ['minilm', 'mpnet'], 'corpora': ['brown'], 'cross': [['minilm', 'gpt2']]}"
    assert config_refusals(cross) == [
        "layers.cross names 'gpt2', which is neither a model of layers.models nor declared under own; add it to own "
        "or fix the name"
    ]
    good = cross.replace("'gpt2'", "'mpnet'")
    out = sh(["snakemake", "-n", "layers", *where, "--config", good], plan_checkout).stdout
    assert re.search(r"^layers_cross\s+1$", out, re.M) and "runs/cross/minilm/mpnet/brown/cross.json" in out


def test_models_of_any_depth_share_a_panel_over_relative_depth():
    """The shared per-layer panels put a model's embeddings at 0 and its last layer at 1, whatever its depth (a
    5-state plain LM beside SmolLM2's 31 states); a static table's one layer at 0."""
    from isoflow.layers.figures import depth

    assert list(depth(pd.DataFrame({"layer": range(5)}))) == [0.0, 0.25, 0.5, 0.75, 1.0]
    deep = depth(pd.DataFrame({"layer": range(31)}))
    assert (deep.iloc[0], deep.iloc[15], deep.iloc[30]) == (0.0, 0.5, 1.0)
    assert list(depth(pd.DataFrame({"layer": [0]}))) == [0.0]


def test_the_summary_counts_first_token_splits_and_real_clusters_apart():
    """layers_summary over three hand-made layers: layer 1 splits off its first tokens (and, without them, two
    outliers), layer 2 into two real clusters; the ranges, counts and the strongest position ordering are these
    layers'."""
    from isoflow.layers.report import summary_table

    layers = pd.DataFrame(
        {
            "model": "m",
            "corpus": "c",
            "layer": [0, 1, 2],
            "s_inter": [0.2, 0.5, 0.4],
            "s_intra": [1.0, 0.9, 0.8],
            "isoscore": [0.3, 0.01, 0.05],
            "isoscore_centred": [0.3, 0.2, 0.25],
            "cosine_anisotropy_centred": [0.001, -0.004, 0.002],
            "cluster_k": [1, 2, 2],
            "cluster_silhouette": [0.05, 0.95, 0.4],
            "cluster_rule_in_spread": [True, False, False],
            "nofirst_cluster_k": [1, 2, 2],
            "symbol_silhouette": [0.01, -0.1, 0.03],
            "pc1_rho_position": [0.1, -0.7, 0.2],
            "pc2_rho_position": [0.0, 0.3, 0.1],
            "pc3_rho_position": [0.2, 0.1, 0.0],
            "pc1_rho_log_frequency": [0.9, 0.1, -0.95],
            "pc2_rho_log_frequency": [0.0, 0.0, 0.0],
            "pc3_rho_log_frequency": [0.0, 0.0, 0.0],
            "outlier_count": [0, 3, 2],
            "peak_ratio": [2.0, 80.0, 40.0],
            "lid_cosine": [10.0, 12.0, 14.0],
        }
    )
    clusters = pd.DataFrame(
        {
            "model": "m",
            "corpus": "c",
            "layer": [1, 1, 1, 1, 2, 2, 2, 2],
            "subset": ["all", "all", "no first token", "no first token"] * 2,
            "share": [0.9, 0.1, 0.999, 0.001, 0.7, 0.3, 0.6, 0.4],
            "share_first_position": [0.0, 1.0, 0.0, 0.0, 0.1, 0.3, 0.0, 0.0],
        }
    )
    metas = {"m/c": {"dim": 8, "input_table": {"lid_cosine": 30.0}}}
    row = summary_table(layers, metas, clusters).iloc[0]
    assert (row.layers, row.dim, row.s_inter_min, row.s_inter_max, row.isoscore_centred_min) == (3, 8, 0.2, 0.5, 0.2)
    assert row.abs_cosine_centred_max == 0.004 and row.split_silhouette_max == 0.95
    assert (row.k_split_layers, row.first_token_split_layers) == (2, 1)
    assert (row.nofirst_split_layers, row.nofirst_clustered_layers, row.rule_in_spread_layers) == (2, 1, 1)
    assert (row.position_rho_max, row.position_rho_layer, row.frequency_rho_max) == (0.7, 1, 0.95)
    assert (row.outlier_layers, row.peak_ratio_max, row.lid_cosine_mean, row.input_table_lid_cosine) == (
        2,
        80.0,
        12.0,
        30.0,
    )


def test_the_roll_depth_is_also_viewed_without_its_far_out_cluster(tmp_path):
    """Where K-means splits the roll layer (a few points far out, as a causal LM's first tokens), its largest cluster
    gets a PCA view of its own, drawn beside the whole in layers_roll."""
    from collections import Counter
    from types import SimpleNamespace

    from isoflow.layers import ROLL_LARGEST
    from isoflow.layers.figures import roll_figure
    from isoflow.layers.run import _measure_layer

    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 8)).astype(np.float32)
    X[:40] += 50.0  # the far-out few
    types = np.array([f"w{i % 20}" for i in range(300)], dtype=object)
    positions = np.tile(np.arange(15), 20)
    job = SimpleNamespace(
        dev=torch.device("cpu"), settings=LayerSettings(sample_cap=10_000, k_max=3, k_lid=5, kmeans_samples=2)
    )
    store = SimpleNamespace(layer=lambda i: X)
    done = _measure_layer(job, store, 0, 1, types, positions, Counter(types), {"middle": 2, "roll": 1})
    views = pd.concat(done["views"], ignore_index=True).assign(model="m", corpus="c")
    assert done["row"]["cluster_k"] == 2 and sorted(views["view"].unique()) == sorted(["roll", ROLL_LARGEST])
    largest = views[views["view"] == ROLL_LARGEST]
    assert len(largest) == 260 and largest["cluster"].nunique() == 1
    assert (largest["position"].to_numpy() == positions[40:]).all()  # each point keeps its own position
    written = roll_figure(views[views["view"] == "roll"], tmp_path, largest)
    assert {p.name for p in written} == {"layers_roll.png", "layers_roll.pdf"}


def test_models_are_compared_at_the_largest_number_of_types_every_one_reaches(tmp_path):
    """matched_types: per corpus, the largest rung (125 x 2^k) that every model's curve reaches; matched_table reads
    each model's S_inter there beside its value over all its types; both figures draw."""
    from isoflow.layers.compare import DEPTH_LABEL, cka_figure, draw_types, matched_table, matched_types, types_figure
    from isoflow.layers.measure import type_rungs

    rows = []
    for model, n_types in (("a", 1100), ("b", 700), ("c", 5000)):
        for layer in (0, 1):
            for n in type_rungs(n_types):
                rows.append(
                    {
                        "model": model,
                        "corpus": "brown",
                        "layer": layer,
                        "n_types": n,
                        "s_inter": n / 1e4 + layer,
                        "s_inter_centred": -n / 1e4,
                    }
                )
    curve = pd.DataFrame(rows)
    assert matched_types(curve) == {"brown": 500}  # b has 700 types: rungs 125, 250, 500, then its 700
    table = matched_table(curve)
    assert len(table) == 6 and (table["matched_types"] == 500).all()
    a1 = table[(table.model == "a") & (table.layer == 1)].iloc[0]
    assert (a1["n_types"], a1["s_inter"], a1["s_inter_matched"]) == (1100, 1100 / 1e4 + 1, 500 / 1e4 + 1)
    assert a1["s_inter_centred_matched"] == -500 / 1e4
    assert matched_types(curve[curve.model != "b"].assign(n_types=lambda d: d.n_types.clip(upper=100))) == {}

    cka = pd.DataFrame(
        [
            {
                "model": m,
                "corpus": "brown",
                "subset": sub,
                "layer_a": i,
                "layer_b": j,
                "n_points": 50,
                "cka": 1.0 - abs(i - j) / 4,
                "cka_debiased": 1.0 - abs(i - j) / 3,
            }
            for m in ("a", "b")
            for sub in ("all", "no first token")
            for i in range(3)
            for j in range(3)
        ]
    )
    assert [p.name for p in types_figure(curve, tmp_path)] == ["layers_types.png", "layers_types.pdf"]
    fig = draw_types(curve)  # compared panels on one x and one y scale; a colour bar names every layer's colour
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert (
        len(panels) == 6 and len({ax.get_xlim() for ax in panels}) == 1 and len({ax.get_ylim() for ax in panels}) == 1
    )
    assert panels[0].get_xlim()[1] >= 5000  # c's 5,000 types are inside every panel, b's included
    (bar,) = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert bar.get_ylabel() == DEPTH_LABEL
    assert [p.name for p in cka_figure(cka, tmp_path)] == ["layers_cka.png", "layers_cka.pdf"]


def test_cka_heatmaps_share_one_box_whatever_the_layer_counts():
    """A 5 × 31 cross comparison beside a 3 × 3 one: every panel the same size (cells stretched), not a strip."""
    from isoflow.layers.compare import draw_heatmaps

    def rows(n_a, n_b):
        return pd.DataFrame(
            [
                {"layer_a": i, "layer_b": j, "subset": "all", "n_words": 40, "cka_debiased": 1.0 / (1 + abs(i - j))}
                for i in range(n_a)
                for j in range(n_b)
            ]
        )

    panels = [
        (name, rows(*shape), "b: layer", "a: layer", "n_words", "words")
        for name, shape in (("square", (3, 3)), ("strip", (5, 31)))
    ]
    fig = draw_heatmaps(panels, ("all", "no first word"), "title")
    fig.canvas.draw()
    boxes = [ax.get_position() for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(boxes) == 2  # one subset present: one column
    assert abs(boxes[0].height - boxes[1].height) < 1e-6 and abs(boxes[0].width - boxes[1].width) < 1e-6
    assert boxes[1].height > 0.5 * boxes[1].width  # not squashed into a strip
    images = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert [im.shape for im in images] == [(3, 3), (5, 31)]


def test_two_models_are_compared_layer_by_layer_on_the_same_words(tiny_bert, tiny_gpt2, tmp_path):
    """cross_model_cka: a word is one row in both models (the mean of its pieces), whatever the tokenisers and the
    batches; a model against itself gives 1 on the diagonal; every layer pair is there, with and without first words."""
    from isoflow.layers.cross import CROSS_COLUMNS, cross_model_cka, word_states, words_sample
    from isoflow.metrics import linear_cka

    bert, gpt2 = (load_encoder(resolve_model(str(m), cache=tmp_path), device="cpu") for m in (tiny_bert, tiny_gpt2))
    rng = np.random.default_rng(0)
    vocabulary = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it"]
    corpus = [list(rng.choice(vocabulary, size=rng.integers(1, 9))) for _ in range(60)]
    sentences = words_sample(corpus, 150, seed=0)
    assert 150 <= sum(map(len, sentences)) < 150 + 9 and words_sample(corpus, 150, seed=0) == sentences
    keys, states = word_states(gpt2, sentences, batch_size=7)
    assert sorted(keys) == [(i, w) for i, s in enumerate(sentences) for w in range(len(s))]  # every word, once
    one_by_one = [word_states(gpt2, [s], batch_size=1)[1] for s in sentences]
    for layer, points in enumerate(states):
        expected = np.concatenate([parts[layer] for parts in one_by_one])
        assert np.allclose(points[[keys[k] for k in sorted(keys)]], expected, atol=1e-5)

    rows = pd.DataFrame(cross_model_cka(bert, gpt2, sentences, batch_size=5), columns=list(CROSS_COLUMNS))
    assert len(rows) == 2 * bert.n_states * gpt2.n_states and set(rows["subset"]) == {"all", "no first word"}
    assert (rows[rows.subset == "all"]["n_words"] == len(keys)).all()
    cell = rows[(rows.subset == "all") & (rows.layer_a == 1) & (rows.layer_b == 2)].iloc[0]
    bert_keys, bert_states = word_states(bert, sentences)
    order = sorted(keys)
    x = bert_states[1][[bert_keys[k] for k in order]]
    y = states[2][[keys[k] for k in order]]
    assert cell["cka"] == pytest.approx(linear_cka(x, y), abs=1e-6)
    itself = pd.DataFrame(cross_model_cka(gpt2, gpt2, sentences), columns=list(CROSS_COLUMNS))
    diagonal = itself[(itself.subset == "all") & (itself.layer_a == itself.layer_b)]
    assert np.allclose(diagonal["cka"], 1.0, atol=1e-6)


def test_layers_cross_writes_a_run_the_layers_report_tables_and_draws(tiny_bert, tiny_gpt2, tmp_path, capsys):
    """`isoflow layers-cross`: every layer pair of two models on the same words, as one run folder (cross.parquet,
    cross.json: the record) under results/layers/runs/cross/<a>/<b>/<corpus>; `isoflow layers-report` given it beside
    a layer analysis writes the table layers_cross (the run's rows) and its figure; a static table or too few words
    are refused in one line, nothing written."""
    from isoflow.layers import CROSS_COLUMNS, REPORT_FIGURES, REPORT_TABLES

    corpus = tmp_path / "notes.txt"
    rng = np.random.default_rng(1)
    words = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it"]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=rng.integers(2, 9))) for _ in range(40)) + "\n")
    common = ["--corpus", str(corpus), "--data-dir", str(tmp_path), "--results", str(tmp_path / "r"), "--device", "cpu"]
    argv = ["layers-cross", "--model", str(tiny_bert), "--model-name", "bert", "--other", str(tiny_gpt2)]
    assert main([*argv, "--other-name", "gpt", "--words", "100", *common]) == 0, capsys.readouterr().err
    run = tmp_path / "r/layers/runs/cross/bert/gpt/notes"
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == ["cross.json", "cross.parquet"]
    record = json.loads((run / "cross.json").read_text())
    assert record["section"] == "layers" and record["layers"] == [3, 3] and record["settings"]["n_words"] == 100
    assert 100 <= record["words_sampled"] < 109 and record["complete"] and "code" in record and "threads" in record
    rows = pd.read_parquet(run / "cross.parquet")
    assert list(rows.columns) == ["model_a", "model_b", "corpus", *CROSS_COLUMNS] and len(rows) == 2 * 3 * 3
    assert (rows[rows.subset == "all"]["n_words"] == record["words_sampled"]).all()
    assert rows["cka"].between(0, 1 + 1e-9).all()

    analysis = run_layers(
        ModelSpec(str(tiny_gpt2), "gpt"),
        str(corpus),
        settings=LayerSettings(max_tokens=200, k_lid=5, k_max=3, kmeans_samples=1, kmeans_starts=1),
        corpus_name="notes",
        data_dir=tmp_path,
        results=tmp_path / "r",
        device="cpu",
        progress=False,
    )
    out = ["--tables", str(tmp_path / "tables"), "--figures", str(tmp_path / "figures")]
    assert main(["layers-report", str(analysis), str(run), *out]) == 0, capsys.readouterr().err
    assert {f.stem for f in (tmp_path / "tables").glob("*.csv")} == set(REPORT_TABLES)
    assert {f.stem for f in (tmp_path / "figures").glob("*.png")} == set(REPORT_FIGURES)
    table = pd.read_csv(tmp_path / "tables/layers_cross.csv")
    assert len(table) == len(rows) and table["cka_debiased"].to_numpy() == pytest.approx(
        rows.sort_values(["subset", "layer_a", "layer_b"])["cka_debiased"].to_numpy(), abs=1e-4
    )
    capsys.readouterr()
    assert main(["layers-cross", "--model", "glove-50d", "--other", str(tiny_gpt2), *common, "--out", "x"]) == 2
    assert "glove-50d is a static table" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main([*argv, "--words", "3", *common, "--out", str(tmp_path / "x")])
    assert refused.value.code == 2 and "--words: must be at least 4" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_every_layers_report_output_has_its_html_report_caption():
    """snakemake --report reads a caption for each declared output of layers_report: report/<table>_table.rst and
    report/<figure>.rst (a missing one fails the HTML report, not the run)."""
    from pathlib import Path

    from isoflow.layers import REPORT_FIGURES, REPORT_TABLES

    root = Path(__file__).resolve().parents[1] / "report"
    wanted = [f"{t}_table.rst" for t in REPORT_TABLES] + [f"{f}.rst" for f in REPORT_FIGURES]
    assert "layers_cross_table.rst" in wanted
    assert [w for w in wanted if not (root / w).is_file()] == []


def test_per_layer_panels_name_each_model_once_and_each_line_style_once(tmp_path, monkeypatch):
    """The per-layer panels draw each model raw and cluster-centred (and a static model as one dotted value): their
    legend names each model once by its colour and each line style once, not a model-and-style pair per entry."""
    from isoflow.layers import figures as layer_figures
    from isoflow.reporting.figures import model_colour

    drawn, keys = [], []  # the figures' names in order, and the handles each gave its legend (laid out elsewhere)
    monkeypatch.setattr(layer_figures, "save", lambda fig, stem: drawn.append(stem.name) or [])
    monkeypatch.setattr(layer_figures, "legend_below", lambda fig, handles: keys.append(handles))
    rows = [
        {"model": model, "corpus": "brown", "layer": layer, "static": False, "s_inter": 0.1 * layer,
         "s_inter_centred": 0.05 * layer, "s_intra": 0.9, "s_intra_centred": 0.8, "isoscore": 0.2,
         "isoscore_centred": 0.3, "lid_euclidean": 10.0, "lid_cosine": 9.0}
        for model in ("minilm", "plain-bert") for layer in range(3)
    ] + [{"model": "glove-50d", "corpus": "brown", "layer": 0, "static": True, "s_inter": 0.09, "s_intra": 0.5,
          "isoscore": 0.4, "lid_euclidean": 12.0, "lid_cosine": 11.0}]  # fmt: skip
    layer_figures.figures(pd.DataFrame(rows), pd.DataFrame({"view": []}), tmp_path)
    handles = keys[drawn.index("layers_similarity")]
    labels = [h.get_label() for h in handles]
    assert labels == [
        "minilm",
        "plain-bert",
        "glove-50d",
        "each layer",
        "each layer, cluster-centred",
        "static vectors",
    ]
    colours = {h.get_label(): h.get_color() for h in handles}
    assert all(colours[m] == model_colour(m) for m in ("minilm", "plain-bert", "glove-50d"))
    styles = {h.get_label(): h.get_linestyle() for h in handles}
    assert (styles["each layer"], styles["each layer, cluster-centred"], styles["static vectors"]) == ("-", "--", ":")


def test_the_spectrum_figure_draws_each_measure_without_outliers_and_without_first_positions(tmp_path, monkeypatch):
    """layers_spectrum: a panel per spectral measure and uniformity, each model's layers drawn as measured (solid),
    without the outlier dimensions (dashed, where measured: uniformity is not) and without first positions (dash-dot);
    the three ranks on log axes, α-ReQ and uniformity (negative) on linear ones."""
    from isoflow.layers import REPORT_FIGURES
    from isoflow.layers import figures as layer_figures

    figs, keys = {}, []
    monkeypatch.setattr(layer_figures, "save", lambda fig, stem: figs.setdefault(stem.name, fig) and [])
    monkeypatch.setattr(layer_figures, "legend_below", lambda fig, handles: keys.append(handles))
    measures = [name for name, _ in layer_figures.SPECTRUM_PANELS]
    rows = []
    for model in ("minilm", "plain-bert"):
        for layer in range(3):
            row = {"model": model, "corpus": "brown", "layer": layer, "static": False}
            for i, name in enumerate(measures):
                value = -1.5 + 0.1 * layer if name == "uniformity" else 10.0 * (i + 1) + layer
                row |= {name: value, f"{name}_nofirst": value + 1.0}
                if name != "uniformity":
                    row[f"{name}_removed"] = value + 2.0
            rows.append(row)
    layer_figures.figures(pd.DataFrame(rows), pd.DataFrame({"view": []}), tmp_path)
    assert "layers_spectrum" in REPORT_FIGURES
    axes = figs["layers_spectrum"].axes
    assert [ax.get_title() for ax in axes] == [f"{label} — brown" for _, label in layer_figures.SPECTRUM_PANELS]
    scales = [ax.get_yscale() for ax in axes]
    assert scales == ["log", "log", "log", "linear", "linear"]
    for ax, name in zip(axes, measures):
        styles = sorted(line.get_linestyle() for line in ax.get_lines())
        expected = ["-", "-", "-.", "-."] + ([] if name == "uniformity" else ["--", "--"])
        assert styles == sorted(expected), name
        top = max(max(line.get_ydata()) for line in ax.get_lines())
        assert top == pytest.approx(max(r.get(f"{name}_removed", r[f"{name}_nofirst"]) for r in rows))
    labels = [h.get_label() for h in keys[list(figs).index("layers_spectrum")]]
    assert labels == ["minilm", "plain-bert", "each layer", "each layer, without the outlier dimensions",
                      "each layer, without first positions"]  # fmt: skip


def test_a_subset_of_layers_is_the_same_measurement_of_those_layers(tiny_gpt2, tmp_path):
    """--layers: only the named states are stored and measured, each row and CKA cell equal to the full analysis'
    (the same tokens, the same samples); the record names them; a view layer outside them, an index past the model's
    states or a spec that is no index or slice is refused in one line (the last before anything loads)."""
    from isoflow.layers.run import run_layers

    corpus = tmp_path / "notes.txt"
    rng = np.random.default_rng(1)
    words = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it"]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=8)) for _ in range(80)) + "\n")
    kw = dict(settings=LayerSettings(max_tokens=300, k_lid=5, k_max=3, kmeans_samples=1, kmeans_starts=1),
              device="cpu", progress=False, results=tmp_path)  # fmt: skip
    full = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "full", **kw)
    some = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "some", layers="0,-1", **kw)
    n_states = json.loads((full / "meta.json").read_text())["n_layers"]
    meta = json.loads((some / "meta.json").read_text())
    assert meta["layers_measured"] == [0, n_states - 1] and meta["view_layer"] == n_states - 1
    rows = pd.read_parquet(some / "layers.parquet")
    # each measured layer's arithmetic and its large parts' seconds, what its time is read against (layers.work)
    assert sorted(meta["work"]) == ["layer0", f"layer{n_states - 1}"]
    for (name, work), lid_points in zip(sorted(meta["work"].items(), key=lambda w: len(w[0])), rows.lid_points):
        assert work["neighbour_products"] == 2 * lid_points**2 * meta["dim"] and work["lloyd_iterations"] >= 2 * 2
        assert work["silhouette_products"] > 0 and work["spectrum_products"] > 0
        parts = sum(work[f"seconds_{part}"] for part in ("spectrum", "k_decisions", "neighbours"))
        assert 0 < parts <= meta["seconds"][name]
    every = pd.read_parquet(full / "layers.parquet")
    pd.testing.assert_frame_equal(rows, every[every.layer.isin([0, n_states - 1])].reset_index(drop=True))
    cka = pd.read_parquet(some / "cka.parquet")
    full_cka = pd.read_parquet(full / "cka.parquet")
    kept = full_cka[full_cka.layer_a.isin([0, n_states - 1]) & full_cka.layer_b.isin([0, n_states - 1])]
    pd.testing.assert_frame_equal(cka.reset_index(drop=True), kept.reset_index(drop=True))
    measures = rf"\[0, {n_states - 1}\]"
    with pytest.raises(ValueError, match=rf"view layer 1 is not measured: --layers 0,-1 measures {measures}"):
        run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "v", layers="0,-1", view_layer=1, **kw)
    with pytest.raises(ValueError, match=rf"layer 9 is out of range; the model has states 0..{n_states - 1}"):
        run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "o", layers="9", **kw)
    with pytest.raises(ValueError, match=r"'every' is neither a layer's index nor a slice; give e.g. 0,6,12"):
        run_layers("no-such-model", str(corpus), out=tmp_path / "s", layers="every", **kw)


def test_a_layers_counted_arithmetic_is_the_one_its_shape_gives(tiny_gpt2, tmp_path):
    """What a run records it did (meta.json work) is what isoflow.layers.work.expected gives from each layer's shape
    before the run: the spectra's, the silhouettes' and the neighbour searches' products to the unit, K-means' at the
    run's own mean Lloyd iterations within the spread of K (its products weigh each K's iterations by K)."""
    from isoflow import corpora
    from isoflow.layers.encoder import batches, count_points, load_encoder, padded_positions
    from isoflow.layers.run import run_layers
    from isoflow.layers.work import expected
    from isoflow.models.resolve import resolve_model

    corpus = tmp_path / "notes.txt"
    rng = np.random.default_rng(2)
    words = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it"]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=8)) for _ in range(80)) + "\n")
    settings = LayerSettings(max_tokens=300, sample_cap=200, k_lid=5, k_max=4, kmeans_samples=2, kmeans_starts=1)
    out = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "run", settings=settings, device="cpu", progress=False)
    meta, rows = json.loads((out / "meta.json").read_text()), pd.read_parquet(out / "layers.parquet")
    encoder = load_encoder(resolve_model(str(tiny_gpt2)), "cpu")
    chosen = corpora.sample(corpora.load(str(corpus), tmp_path), 300, 0, lambda w: count_points(encoder, w))
    positions = np.concatenate([b.positions for b in batches(encoder, chosen)])
    assert len(positions) == meta["n_points"] > settings.sample_cap  # the K decisions on a sample
    # the positions its forward passes computed, padding included (what the encoding's time grows with)
    assert meta["positions_computed"] == padded_positions(encoder, chosen) > meta["n_points"]
    for row in rows.itertuples():
        work = meta["work"][f"layer{row.layer}"]
        fits = 2 * settings.kmeans_samples * settings.kmeans_starts * (settings.k_max - 1)  # with and without firsts
        shape = dict(past_first=int((positions > 0).sum()), distinct=int(row.lid_points))
        predicted = expected(
            meta["n_points"], meta["dim"], settings, iterations=work["lloyd_iterations"] / fits, **shape
        )
        for name in ("spectrum_products", "silhouette_products", "neighbour_products", "lloyd_iterations"):
            assert work[name] == pytest.approx(predicted[name], rel=1e-12), name
        assert 2 / 3 < work["kmeans_products"] / predicted["kmeans_products"] < 4 / 3  # K from 2 to 4, mean 3
        assert min(work[name] for name in predicted) > 0  # every part ran


def test_a_model_spread_over_devices_measures_as_one_on_a_device(tiny_gpt2, tmp_path, capsys):
    """--device-map auto (accelerate places each block; here every one on the CPU, the only device): the same rows as
    the model loaded whole, the record naming the placement; a model that is not a Hugging Face folder is refused in
    one line."""
    from isoflow.cli import main

    corpus = tmp_path / "notes.txt"
    rng = np.random.default_rng(2)
    words = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it"]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=8)) for _ in range(60)) + "\n")
    common = ["layers", "--model", str(tiny_gpt2), "--corpus", str(corpus), "--max-tokens", "200", "--k-lid", "5",
              "--k-max", "3", "--kmeans-samples", "1", "--kmeans-starts", "1", "--device", "cpu",
              "--quiet"]  # fmt: skip
    assert main([*common, "--out", str(tmp_path / "whole")]) == 0
    assert main([*common, "--device-map", "auto", "--out", str(tmp_path / "spread")]) == 0
    spread = pd.read_parquet(tmp_path / "spread" / "layers.parquet")
    pd.testing.assert_frame_equal(spread, pd.read_parquet(tmp_path / "whole" / "layers.parquet"))
    assert json.loads((tmp_path / "spread" / "meta.json").read_text())["source"]["device_map"] == "auto"
    capsys.readouterr()
    assert main(["layers", "--model", "glove-50d", "--corpus", str(corpus), "--device-map", "auto", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--device-map auto: glove-50d is a static model, loaded whole" in err[-1]


def test_a_run_keeping_its_samples_points_measures_the_sums_over_all_of_them(tiny_gpt2, tmp_path):
    """states: sample — only the K-means samples' points are stored (their union, the same rows in every layer); the
    measures that sums give are taken over all points while encoding and equal the full run's; with every point in
    the samples (n ≤ sample_cap) every column equals the full run's (float tolerance), and so do the other files.
    α-ReQ over the whole numerical rank and the effective rank over σ too: after GPT-2's final LayerNorm the states
    lack a direction (their coordinates' mean is 0), which the in-memory spectrum, taken in float64 products of the
    float32 states, gives no eigenvalue, as the float64 sums and the float64 states do not (float32 products gave it a
    rounding eigenvalue that the fit counted, its size the CPU's kernels': α-ReQ 0.5 and more above, on an Intel
    Xeon)."""
    import torch

    from isoflow import corpora
    from isoflow.layers.encoder import batches, count_points, load_encoder
    from isoflow.layers.run import run_layers
    from isoflow.metrics import alpha_req, effective_rank
    from isoflow.models.resolve import resolve_model

    corpus = tmp_path / "notes.txt"
    rng = np.random.default_rng(3)
    words = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it", "a"]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=9)) for _ in range(120)) + "\n")
    base = dict(max_tokens=600, k_lid=5, k_max=3, kmeans_samples=2, kmeans_starts=1, pair_points=60)
    kw = dict(device="cpu", progress=False, results=tmp_path)

    def run(name, **settings):
        out = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / name, settings=LayerSettings(**settings), **kw)
        return out, pd.read_parquet(out / "layers.parquet"), json.loads((out / "meta.json").read_text())

    encoder = load_encoder(resolve_model(str(tiny_gpt2)), "cpu")
    sentences = corpora.sample(corpora.load(str(corpus), tmp_path), 600, 0, lambda w: count_points(encoder, w))
    states = [np.concatenate(layer) for layer in zip(*(b.layers for b in batches(encoder, sentences)))]
    in_float64 = [alpha_req(torch.from_numpy(layer.astype(np.float64))) for layer in states]
    rank_in_float64 = [effective_rank(torch.from_numpy(layer.astype(np.float64))) for layer in states]

    full, every, _ = run("full", **base, sample_cap=2000)
    kept, some, meta = run("kept", **base, sample_cap=2000, states="sample")
    assert meta["points_kept"] == meta["n_points"] == len(states[0]) and meta["settings"]["states"] == "sample"
    for column, exact in (("alpha_req", in_float64), ("effective_rank", rank_in_float64)):  # in memory, and summed
        np.testing.assert_allclose(every[column], exact, rtol=1e-9)
        np.testing.assert_allclose(some[column], exact, rtol=1e-9)
    pd.testing.assert_frame_equal(some, every, rtol=1e-5, atol=1e-7)  # every column
    for table in ("types", "dims", "cka", "clusters", "pca", "kmeans"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(kept / f"{table}.parquet"), pd.read_parquet(full / f"{table}.parquet"), rtol=1e-5, atol=1e-7
        )
    full, every, _ = run("full-capped", **base, sample_cap=150)
    kept, some, meta = run("kept-capped", **base, sample_cap=150, states="sample")
    assert 150 < meta["points_kept"] <= 300 < meta["n_points"]  # the two samples' union, not the whole run
    summed = sorted(_streamed_columns())
    assert {"alpha_req", "alpha_req_nofirst", "effective_rank", "effective_rank_nofirst"} <= set(summed)
    pd.testing.assert_frame_equal(some[summed], every[summed], rtol=1e-5, atol=1e-7)  # over all points, as in memory
    np.testing.assert_allclose(some["alpha_req"], in_float64, rtol=1e-9)
    np.testing.assert_allclose(some["effective_rank"], rank_in_float64, rtol=1e-9)
    for name in ("cluster_k", "cluster_silhouette", "lid_euclidean", "twonn", "symbol_silhouette", "n_sample"):
        np.testing.assert_allclose(some[name], every[name], rtol=1e-5, err_msg=name)  # the same samples


def _streamed_columns() -> set[str]:
    """The names of the columns LayerStatistics.columns gives, read off a tiny cloud."""
    import torch

    from isoflow.layers.streamed import LayerStatistics, TypeIndex

    index, stats = TypeIndex(), LayerStatistics(4)
    x = torch.randn(12, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    stats.update(x, index.codes([f"w{i % 5}" for i in range(12)]), torch.arange(12) % 3 > 0)
    return set(stats.columns(index, outlier_factor=5.0, outlier_remove=1)) - {"profile", "curve"}


def test_a_stopped_run_keeping_its_samples_points_resumes_with_its_sums(tiny_gpt2, tmp_path, monkeypatch):
    """states: sample, stopped while measuring: the same call reads the sums kept beside the tokens (no second
    encoding; the types' sums on disk read where the folder has moved to) and writes what an uninterrupted run
    writes; a progress folder holding the tokens without the sums is encoded again."""
    import isoflow.layers.run as layers_run
    from isoflow.atomic import in_progress_path

    corpus = tmp_path / "notes.txt"
    rng = np.random.default_rng(5)
    words = ["the", "film", "plot", "good", "bad", "dull", "is", "was", "not", "and", "it"]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=8)) for _ in range(80)) + "\n")
    settings = LayerSettings(max_tokens=400, k_lid=5, k_max=3, kmeans_samples=2, kmeans_starts=1, sample_cap=120,
                             pair_points=40, states="sample")  # fmt: skip
    kw = dict(settings=settings, device="cpu", progress=False, results=tmp_path)
    whole = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "whole", **kw)
    measure, encode = layers_run._measure_layer, layers_run._encode
    calls = {"encode": 0}

    def stop_at_layer_one(job, store, stored, layer, *args):
        if layer == 1:
            raise KeyboardInterrupt
        return measure(job, store, stored, layer, *args)

    def counted(*args):
        calls["encode"] += 1
        return encode(*args)

    monkeypatch.setattr(layers_run, "_encode", counted)
    monkeypatch.setattr(layers_run, "_measure_layer", stop_at_layer_one)
    with pytest.raises(KeyboardInterrupt):
        run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "before" / "again", **kw)
    progress = in_progress_path(tmp_path / "before" / "again")
    assert (progress / "statistics.pt").is_file() and calls["encode"] == 1
    assert sorted(p.name for p in (progress / "states").glob("types*")) == [f"types{k}.f64" for k in range(3)]
    (tmp_path / "before").rename(tmp_path / "moved")  # its types' sums are read where the folder is now
    monkeypatch.setattr(layers_run, "_measure_layer", measure)
    again = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "moved" / "again", **kw)
    assert calls["encode"] == 1 and json.loads((again / "meta.json").read_text())["resumed"]["layers"] == [0]
    for name in ("layers", "types", "dims", "cka"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(again / f"{name}.parquet"), pd.read_parquet(whole / f"{name}.parquet")
        )
    monkeypatch.setattr(layers_run, "_measure_layer", stop_at_layer_one)
    with pytest.raises(KeyboardInterrupt):
        run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "third", **kw)
    (in_progress_path(tmp_path / "third") / "statistics.pt").unlink()  # a folder left before the sums were kept
    monkeypatch.setattr(layers_run, "_measure_layer", measure)
    third = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "third", **kw)
    assert calls["encode"] == 3
    pd.testing.assert_frame_equal(pd.read_parquet(third / "layers.parquet"), pd.read_parquet(whole / "layers.parquet"))


def passes_cost(groups, lengths, budget, overhead) -> float:
    """Positions computed by passes over ``groups`` plus ``overhead`` a pass; infinite where a pass of several
    sentences exceeds ``budget``."""
    sizes = [len(g) * max(lengths[i] for i in g) for g in groups]
    fits = all(size <= budget or len(g) == 1 for size, g in zip(sizes, groups))
    return sum(sizes) + overhead * len(groups) if fits else np.inf


def test_a_batchs_forward_passes_group_sentences_of_similar_length_at_the_fewest_positions():
    """forward_groups: among every way of cutting the sentences sorted by length into runs (brute force), the one that
    computes the fewest positions plus a pass's overhead, each pass within its positions (a longer sentence alone)."""
    import itertools

    from isoflow.layers.encoder import forward_groups

    rng = np.random.default_rng(5)
    for _ in range(40):
        lengths = rng.integers(3, 60, size=int(rng.integers(1, 8))).tolist()
        budget, overhead = int(rng.integers(40, 200)), int(rng.integers(0, 40))
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))

        cuts = [c for r in range(len(order)) for c in itertools.combinations(range(1, len(order)), r)]
        runs = ([order[a:b] for a, b in zip((0, *c), (*c, len(order)))] for c in cuts)
        best = min(passes_cost(groups, lengths, budget, overhead) for groups in runs)
        groups = forward_groups(lengths, budget, overhead)
        assert passes_cost(groups, lengths, budget, overhead) == best and sorted(i for g in groups for i in g) == list(
            range(len(lengths))
        )
        assert all(g == sorted(g) for g in groups)
    assert forward_groups([10, 12, 11], 2048) == [[0, 1, 2]]  # nothing to gain: the batch as it is
    assert forward_groups([141] + [25] * 31, 2048) == [[0], list(range(1, 32))]


def test_a_batch_split_into_passes_gives_each_sentence_its_points_in_order(minilm):
    """A batch whose long sentence would make its short ones pay for its length is computed in passes of similar
    lengths: every point, type, position and token id comes back in the sentences' order, each sentence's states those
    it has alone (padding changes nothing but rounding), in tokens and words modes, and the passes compute fewer
    positions than one padded pass would (what padded_positions counts)."""
    long = ["word"] * 3 + ["unbelievably", "long", "sentence"] * 40
    sentences = [SENTENCES[0], long, *SENTENCES[1:], SENTENCES[0][:3]]
    lengths = [len(minilm.tokenize([s])[0]["input_ids"][0]) for s in sentences]
    for mode in ("tokens", "words"):
        (batch,) = list(batches(minilm, sentences, batch_size=8, mode=mode))
        alone = [next(batches(minilm, [s], batch_size=1, mode=mode)) for s in sentences]
        assert batch.types == [t for a in alone for t in a.types]
        assert batch.positions.tolist() == [p for a in alone for p in a.positions.tolist()]
        assert batch.token_ids.tolist() == [i for a in alone for i in a.token_ids.tolist()]
        assert batch.n_special == sum(a.n_special for a in alone) == 2 * len(sentences)
        for k in (0, 6):
            np.testing.assert_allclose(batch.layers[k], np.concatenate([a.layers[k] for a in alone]), atol=2e-5)
    assert batch.n_positions == padded_positions(minilm, sentences, batch_size=8) < len(sentences) * max(lengths)
    assert batch.n_positions == lengths[1] + 4 * max(lengths[i] for i in (0, 2, 3, 4))  # the long one alone
