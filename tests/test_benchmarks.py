"""The metric benchmark's subprocess path (benchmarks/metrics.py): each side runs in a spawned process whose result,
or whose failure, comes back to the parent; a child that fails or dies is an error, never a wait without end (on a
GPU it once hung there)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import metrics as bench  # noqa: E402


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    folder = tmp_path_factory.mktemp("case")
    return bench.write_case({"name": "tiny", "n": 300, "d": 8, "k": 3}, folder)


def test_each_side_runs_in_a_spawned_process_and_agrees(case):
    from sklearn.metrics import silhouette_score

    ours = bench.run_isolated("ours", case, "float64", 1)
    reference = bench.run_isolated("reference", case, "float64", 1)
    X, y = np.load(case / "X_float64.npy"), np.load(case / "y.npy")
    assert ours["silhouette"] == pytest.approx(silhouette_score(X, y), abs=1e-9)
    assert reference["silhouette"] == pytest.approx(ours["silhouette"], abs=1e-9)
    assert ours["isoscore"] == pytest.approx(reference["isoscore"], abs=1e-6) and ours["seconds"] > 0


def test_a_failing_child_is_an_error_not_a_hang(case):
    with pytest.raises(RuntimeError, match="failed on cpu: FileNotFoundError"):
        bench.run_isolated("ours", case / "missing", "float64", 1)
    with pytest.raises(RuntimeError, match="failed on no-such-device"):
        bench.run_isolated("ours", case, "float64", 1, device="no-such-device")
