"""IsoScore* on mini-batches (I-STAR's AIM 1): clouds of the set isotropy, estimates that match the metric on the same
batch, the known small-batch behaviour, and the command's outputs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import assert_one_record_schema
from scipy.stats import t as student

from isoflow.cli import main
from isoflow.stability import StabilitySettings, population_isoscore, simulate, spectrum, summary


@pytest.mark.parametrize("dim, target", [(384, 0.1), (384, 0.55), (768, 0.9), (50, 1.0)])
def test_spectrum_has_the_asked_isoscore(dim, target):
    v = spectrum(dim, target)
    assert population_isoscore(v) == pytest.approx(target, abs=1e-10) and v.max() == 1.0 and (np.diff(v) <= 0).all()


def test_population_isoscore_by_hand():
    assert population_isoscore([1, 1, 0, 0]) == pytest.approx(1 / 3)  # 2 of 4 dimensions: (k - 1)/(d - 1)


def test_estimates_converge_to_the_truth_and_shrinkage_pulls_small_batches_up():
    runs = simulate(
        StabilitySettings(
            dims=(64,),
            true_isoscores=(0.3, 1.0),
            batch_sizes=(8, 4096),
            zetas=(0.0, 0.5),
            repeats=3,
            reference_points=50_000,
        )
    )
    table = summary(runs).set_index(["true_isoscore", "batch", "zeta"])
    assert table.loc[(1.0, 4096, 0.0), "mean"] == pytest.approx(1.0, abs=0.03)
    assert table.loc[(0.3, 4096, 0.0), "mean"] == pytest.approx(0.3, abs=0.03)
    for t in (0.3, 1.0):  # 8 points span 7 dimensions: IsoScore <= 6/63; shrinkage towards Σ_S lifts it
        assert table.loc[(t, 8, 0.0), "mean"] <= 6 / 63 + 1e-9 < table.loc[(t, 8, 0.5), "mean"]
    assert set(table["batches"]) == {3}
    # ζ = 0.5 paired with ζ = 0 on the same 3 batches: mean paired difference of |estimate − true|, a t-interval
    plain, shrunk = (runs[(runs.true_isoscore == 1.0) & (runs.batch == 8) & (runs.zeta == z)] for z in (0.0, 0.5))
    d = (shrunk.estimate - 1.0).abs().to_numpy() - (plain.estimate - 1.0).abs().to_numpy()
    half = student.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    row = table.loc[(1.0, 8, 0.5)]
    assert row["abs_error_diff"] == pytest.approx(d.mean(), abs=1e-12) and d.mean() < 0  # towards Σ_S: closer here
    assert row["abs_error_diff_ci_high"] == pytest.approx(d.mean() + half, abs=1e-12)
    assert np.isnan(table.loc[(1.0, 8, 0.0), "spread_diff"])  # plain IsoScore is the reference itself


def test_zeta_zero_is_isoscore_of_the_batch():
    """The estimate at ζ = 0 is the IsoScore package's value on the same batch (re-drawn with the same generator)."""
    import torch
    from IsoScore.IsoScore import IsoScore

    runs = simulate(
        StabilitySettings(
            dims=(16,), true_isoscores=(0.5,), batch_sizes=(40,), zetas=(0.0,), repeats=1, reference_points=1000, seed=7
        )
    )
    gen = torch.Generator().manual_seed(7)
    std = torch.as_tensor(np.sqrt(spectrum(16, 0.5)), dtype=torch.float64)
    torch.randn(1000, 16, generator=gen, dtype=torch.float64)  # the reference sample comes first
    batch = torch.randn(40, 16, generator=gen, dtype=torch.float64) * std
    assert runs["estimate"].iloc[0] == pytest.approx(float(IsoScore(batch)), abs=1e-6)


def test_command_writes_table_figure_and_estimates(tmp_path, capsys):
    rc = main(
        [
            "stability",
            "--dims",
            "32",
            "--true-isoscores",
            "0.2,1",
            "--batch-sizes",
            "8,64",
            "--zetas",
            "0,0.2",
            "--repeats",
            "2",
            "--reference-points",
            "2000",
            "--runs",
            str(tmp_path / "runs"),
            "--tables",
            str(tmp_path / "t"),
            "--figures",
            str(tmp_path / "f"),
            "--quiet",
        ]
    )
    assert rc == 0
    table = pd.read_csv(tmp_path / "t/stability.csv")
    assert len(table) == 2 * 2 * 2 and list(table.columns[:4]) == ["dim", "true_isoscore", "batch", "zeta"]
    assert len(pd.read_parquet(tmp_path / "runs/runs.parquet")) == 2 * 2 * 2 * 2
    assert (tmp_path / "f/stability.png").stat().st_size > 5000
    assert_one_record_schema(json.loads((tmp_path / "runs/meta.json").read_text()), "stability")
    # make redraw: the same table from the estimates written, byte for byte, the estimates untouched
    estimates = (tmp_path / "runs/runs.parquet").read_bytes()
    argv = ["stability", "--from-runs", "--runs", str(tmp_path / "runs"), "--tables", str(tmp_path / "t2")]
    assert main([*argv, "--figures", str(tmp_path / "f2")]) == 0
    assert (tmp_path / "t2/stability.csv").read_bytes() == (tmp_path / "t/stability.csv").read_bytes()
    assert (tmp_path / "runs/runs.parquet").read_bytes() == estimates
    with pytest.raises(SystemExit):
        main(["stability", "--zetas", "0,2"])
    assert "argument --zetas: each value must be at most 1; got 2.0" in capsys.readouterr().err
