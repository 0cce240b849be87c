"""The layer run's time formula (isoflow.layers.timing): the rates a calibration run gives, and the seconds they
predict, against the run's own record and the formula's arithmetic written out here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from isoflow.layers import LayerSettings, timing
from isoflow.layers.timing import Kernels, Rates, fit_encoding, fit_rates, part_seconds, predict
from isoflow.models.shapes import ModelShape, folder_shape

PARTS = ("spectrum", "k_decisions", "neighbours")
KERNELS = Kernels(32, {"float32": 1.0e11, "float64": 5.0e10, "scatter": 8e10}, eigvalsh=1e-4, eigh=2e-4)


SETTINGS = LayerSettings(max_tokens=300, sample_cap=200, k_lid=5, k_max=4, kmeans_samples=1, kmeans_starts=1)


def tiny_run(model, folder, states: str = "all") -> dict:
    """A run of ``model`` over a corpus of 80 sentences, keeping every point or its sample; its record."""
    from dataclasses import replace

    from isoflow.layers.run import run_layers

    corpus = folder / "notes.txt"
    rng = np.random.default_rng(3)
    words = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it"]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=8)) for _ in range(80)) + "\n")
    out = run_layers(str(model), str(corpus), out=folder / states, settings=replace(SETTINGS, states=states),
                     device="cpu", progress=False, data_dir=folder / "data")  # fmt: skip
    return json.loads((out / "meta.json").read_text())


@pytest.fixture(scope="module")
def calibration(tiny_gpt2, tmp_path_factory):
    """A tiny GPT-2's run keeping every point, with its record and shape."""
    return tiny_run(tiny_gpt2, tmp_path_factory.mktemp("calibration")), folder_shape(tiny_gpt2)


def test_a_calibration_runs_rates_are_its_products_over_its_seconds(calibration):
    """Each part's rate is its products summed over the layers over its seconds summed (the spectra's less their eigen
    solves); the encoding's, alone, the multiplied parameters times the positions its forward passes computed
    (padding included) over its seconds, as a fraction of the GEMM rate; and the layers' seconds come back whole from
    the rates and each layer's own counts."""
    meta, shape = calibration
    rates = fit_rates(meta, shape, KERNELS)
    work = list(meta["work"].values())
    total = {key: sum(w[key] for w in work) for key in work[0]}
    eigen = len(work) * timing.SPECTRUM_EIGVALSH * KERNELS.eigvalsh
    assert rates.spectrum == pytest.approx(total["spectrum_products"] / (total["seconds_spectrum"] - eigen), rel=1e-12)
    assert rates.k_decisions == pytest.approx(
        (total["kmeans_products"] + total["silhouette_products"]) / total["seconds_k_decisions"], rel=1e-12
    )
    assert rates.neighbours == pytest.approx(total["neighbour_products"] / total["seconds_neighbours"], rel=1e-12)
    assert shape.embeddings > 0 and shape.multiplied < shape.parameters  # the embeddings are read, not multiplied
    assert rates.encode * KERNELS.gemm["float32"] == pytest.approx(
        shape.multiplied * meta["positions_computed"] / meta["seconds"]["encode"], rel=1e-12
    )
    assert meta["positions_computed"] > meta["n_points"]  # 8-word sentences of 8 to 12 pieces: padded
    layers = [meta["seconds"][name] for name in meta["work"]]
    rebuilt = [sum(part_seconds(w, rates, KERNELS).values()) for w in work]
    assert sum(rebuilt) == pytest.approx(sum(layers), rel=1e-9)
    # two decisions (with and without first positions) of K = 2..4, one sample and start: 6 fits a layer
    assert rates.iterations == pytest.approx(total["lloyd_iterations"] / (6 * len(work)), rel=1e-12)
    assert rates.iterations >= 2


def test_the_calibration_predicts_its_own_encoding_and_its_layers_from_its_shape(calibration):
    """At the calibration's own shape, points, positions, sentences and kernels the formula gives back its encoding's
    seconds, and its layers' within what K-means' products weighing each K's iterations leaves (a third); a short
    run's seconds a position, at the same positions, give its own seconds back."""
    meta, shape = calibration
    rates = fit_rates(meta, shape, KERNELS)
    n, positions = meta["n_points"], meta["positions_computed"]
    seconds = predict(shape, SETTINGS, rates, KERNELS, points=n, positions=positions, sentences=meta["sentences_used"])
    assert seconds["encode"] == pytest.approx(meta["seconds"]["encode"], rel=1e-12)
    unpadded = predict(shape, SETTINGS, rates, KERNELS, points=n, sentences=meta["sentences_used"])
    assert unpadded["encode"] == pytest.approx(seconds["encode"] * n / positions, rel=1e-12)  # no positions: points
    short = timing.ShortRun(positions=1000, points=400, seconds=2.5)
    at_shape = predict(shape, SETTINGS, rates, KERNELS, points=n, positions=positions, short=short)
    assert at_shape["encode"] == pytest.approx(positions * 2.5 / 1000, rel=1e-12)
    assert seconds["encode_scatters"] == 0  # every point kept: nothing folded into sums while encoding
    measured = sum(meta["seconds"][name] for name in meta["work"])
    assert 2 / 3 < seconds["measure"] / measured < 4 / 3
    assert seconds["measure"] == pytest.approx(shape.states * seconds["state"], rel=1e-12)


def test_the_encodings_two_rates_are_solved_from_two_widths():
    """A point's seconds made with known rates for two models of different sizes give those rates back."""
    small, large = ModelShape(22_000_000, 384, 7, 4, 12_000_000), ModelShape(135_000_000, 576, 31, 4, 28_000_000)
    efficiency, overhead = 0.3, 2e-4
    made = [(m.multiplied / (efficiency * g) + overhead, m, g)
            for m, g in ((small, 1.4e11), (large, 1.5e11))]  # fmt: skip
    assert fit_encoding(made) == pytest.approx((efficiency, overhead), rel=1e-9)


def test_the_formula_written_out():
    """A 2,048-wide shape of 17 states keeping a 5,000-point sample of 20,000 points of 800 sentences, in bf16: the
    encoding, the scatters and each part's seconds as the module docstring writes them, each rate carried from the
    calibration's width by the GEMM rates at both, the eigen solves at their seconds at the width."""
    calibrated = Kernels(384, {"float32": 1.2e11, "float64": 6e10, "scatter": 9e10}, eigvalsh=0.01, eigh=0.02)
    rates = Rates(encode=0.5, encode_overhead=2e-4, spectrum=1e10, k_decisions=2e10, neighbours=1.5e10,
                  state_seconds=1.0, iterations=30.0, kernels=calibrated)  # fmt: skip
    kernels = Kernels(2048, {"float32": 1e11, "float64": 5e10, "bfloat16": 2.5e10, "scatter": 1.2e11}, eigvalsh=0.4,
                      eigh=0.9)  # fmt: skip
    model = ModelShape(1_235_814_400, 2048, 17, 2, 128_256 * 2048)
    settings = LayerSettings(max_tokens=20_000, sample_cap=5_000, kmeans_samples=1, kmeans_starts=1, states="sample")
    s = predict(model, settings, rates, kernels, points=20_000, dtype="bfloat16", kept=5_000, sentences=800)
    scatters = 2 * 20_000 * 2048**2 * 17 / 5e10
    assert s["encode_scatters"] == pytest.approx(scatters, rel=1e-12)
    forward = (1_235_814_400 - 128_256 * 2048) / (0.5 * 2.5e10) + 2e-4
    assert s["encode"] == pytest.approx(20_000 * forward + scatters, rel=1e-12)
    n, past = 5_000, 5_000 - 200  # the kept points, and those past their sentence's first position (800 of 20,000)
    spectrum = (2 * n + past) * 2048**2 / (1e10 * 1.2e11 / 9e10) + 6 * 0.4
    # one sample and start: a decision's fits at K = 2..15 take (30 + 2) passes of m · K · d products each
    kmeans = sum(32 * m * sum(range(2, 16)) * 2048 for m in (n, past))
    silhouettes = (n**2 + past**2) * 2048
    decisions = (kmeans + silhouettes) / (2e10 * 1e11 / 1.2e11)
    neighbours = 2 * n**2 * 2048 / (1.5e10 * 1e11 / 1.2e11)
    rest = 1.0 + 0.9 + 6 * 0.4  # the fixed seconds, the principal axes, the sums' spectra
    assert s["state_spectrum"] == pytest.approx(spectrum, rel=1e-12)
    assert s["state_k_decisions"] == pytest.approx(decisions, rel=1e-12)
    assert s["state_neighbours"] == pytest.approx(neighbours, rel=1e-12)
    assert s["state_rest"] == pytest.approx(rest, rel=1e-12)
    assert s["total"] == pytest.approx(s["encode"] + 17 * (spectrum + decisions + neighbours + rest), rel=1e-12)
    fewer = predict(model, settings, rates, kernels, points=20_000, dtype="bfloat16", kept=5_000, sentences=800,
                    measured=5)  # fmt: skip
    assert fewer["measure"] == pytest.approx(5 * s["state"]) and fewer["encode_scatters"] == pytest.approx(
        scatters * 5 / 17
    )


def test_the_eigen_solves_the_formula_counts_are_the_runs(tiny_gpt2, tmp_path, monkeypatch):
    """A state's d × d eigen solves, counted in runs keeping every point and their sample: the spectra's 6, the sums'
    6 more, one principal axes' solve; and a few for the run's views (the view and roll layers' axes), once a run."""
    import torch

    calls: dict = {}
    for name in ("eigvalsh", "eigh"):
        solve = getattr(torch.linalg, name)

        def counted(*args, _solve=solve, _name=name, **kwargs):
            calls[_name] = calls.get(_name, 0) + 1
            return _solve(*args, **kwargs)

        monkeypatch.setattr(torch.linalg, name, counted)
    for states, eigvalsh in (("all", timing.SPECTRUM_EIGVALSH), ("sample", 12)):
        calls.clear()
        meta = tiny_run(tiny_gpt2, tmp_path, states)
        layers = len(meta["work"])
        assert timing.SPECTRUM_EIGVALSH + timing.SUMS_EIGVALSH == 12
        assert calls["eigvalsh"] == layers * eigvalsh, states
        assert 0 < calls["eigh"] - layers * timing.STATE_EIGH <= 3, states  # the run's views: once a run, not a state


def test_a_calibration_that_kept_a_sample_is_refused(calibration):
    meta, shape = calibration
    sampled = {**meta, "settings": {**meta["settings"], "states": "sample"}}
    with pytest.raises(ValueError, match=r"a calibration run keeps every point \(states: all\)"):
        fit_rates(sampled, shape, KERNELS)


def test_an_estimate_counts_the_runs_own_positions_and_predicts_it_from_a_short_run(tiny_gpt2, tmp_path, capsys):
    """`isoflow layers --estimate` writes nothing and counts what the run then records — its points, kept points,
    sentences and the positions its batches compute — and its seconds are the formula's at what it timed: the run's
    positions at the short run's seconds a position (plus the sums' scatters), each measured state the counts
    :func:`isoflow.layers.work.expected` gives at the rates its random states measured, at the real text's Lloyd
    iterations (LLOYD_ITERATIONS, read from the benchmark that measured it)."""
    import contextlib
    import io
    from dataclasses import replace
    from pathlib import Path

    from conftest import isoflow_cli

    from isoflow.layers.estimate import LLOYD_ITERATIONS, PART_POINTS
    from isoflow.layers.run import run_layers
    from isoflow.layers.work import expected

    recorded = json.loads((Path(__file__).parents[1] / "benchmarks/results/layer-time.json").read_text())
    assert LLOYD_ITERATIONS == round(recorded["rates"]["iterations"], 1)
    corpus = tmp_path / "notes.txt"
    rng = np.random.default_rng(3)
    words = ["the", "film", "plot", "good", "bad", "dull", "funny", "is", "was", "not", "very", "and", "it", "."]
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=rng.integers(3, 14))) for _ in range(90)) + "\n")
    settings = replace(SETTINGS, states="sample", sample_cap=120)
    argv = ["layers", "--model", tiny_gpt2, "--corpus", corpus, "--max-tokens", 300, "--sample-cap", 120, "--k-lid", 5,
            "--k-max", 4, "--kmeans-samples", 1, "--kmeans-starts", 1, "--states", "sample", "--layers", "::2",
            "--batch-size", 8, "--estimate", "--data-dir", tmp_path / "data"]  # fmt: skip
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code, err = isoflow_cli(*argv, cwd=tmp_path)
    assert code == 0, err
    made = json.loads(out.getvalue())
    assert not (tmp_path / "results").exists()  # nothing written
    assert "encoding" in err and "min, measuring 2 state(s)" in err  # states 0 and 2 of 3
    assert made["available_memory_mb"] > made["predicted"]["peak_memory_mb"] and " MiB available, disk " in err
    run = run_layers(str(tiny_gpt2), str(corpus), out=tmp_path / "run", settings=settings, layers="::2", batch_size=8,
                     device="cpu", progress=False, data_dir=tmp_path / "data")  # fmt: skip
    meta = json.loads((run / "meta.json").read_text())
    counted = ("n_points", "points_kept", "sentences", "positions", "states_measured")
    recorded_counts = ("n_points", "points_kept", "sentences_used", "positions_computed")
    assert [made[k] for k in counted] == [*(meta[k] for k in recorded_counts), len(meta["layers_measured"])]
    assert made["positions"] > made["n_points"]  # sentences of 3 to 13 words, padded to a batch's longest
    short, p = made["short_run"], made["predicted"]
    d, n = made["dim"], made["points_kept"]
    scatters = 2 * made["n_points"] * d * d * 2 / made["kernels"]["gemm"]["float64"]
    assert p["encode_scatters"] == pytest.approx(scatters, rel=1e-9)
    assert p["encode"] == pytest.approx(made["positions"] * short["seconds"] / short["positions"] + scatters, rel=1e-9)
    assert 0 < short["points"] <= made["n_points"] and made["rates"]["iterations"] == LLOYD_ITERATIONS
    counts = expected(n, d, settings, past_first=n - round(made["sentences"] * n / made["n_points"]),
                      iterations=LLOYD_ITERATIONS)  # fmt: skip
    kernels = Kernels(d, made["kernels"]["gemm"], made["kernels"]["eigvalsh"], made["kernels"]["eigh"])
    rates = Rates(**made["rates"], kernels=kernels)  # calibrated at the model's own width: carried by 1
    parts = part_seconds(counts, rates, kernels, streamed=True)
    assert p["state"] == pytest.approx(sum(parts.values()), rel=1e-9)
    assert p["measure"] == pytest.approx(2 * p["state"], rel=1e-9)
    assert p["total"] == pytest.approx(p["encode"] + p["measure"], rel=1e-9)
    assert p["peak_memory_mb"] > 0 and p["disk_mb"] > 0 and PART_POINTS >= n
    # what it cannot estimate is refused in one line before anything loads
    code, err = isoflow_cli(*argv, "--types", "words", cwd=tmp_path)
    assert code == 2 and err.strip().splitlines()[-1].endswith("(--types tokens); got --types words")
