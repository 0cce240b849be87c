"""The geometry() entry point, the file loaders and the `isoflow geometry` command."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import isoflow_cli, make_cloud
from sklearn.metrics import silhouette_score

from isoflow.arrays import InputFileError, load_array
from isoflow.cli import main
from isoflow.devices import resolve_device
from isoflow.metrics import METRIC_NAMES, geometry, isoscore, sample_rows, silhouette


@pytest.fixture(scope="module")
def cloud():
    return make_cloud("clustered", 400, 12, 0)


def test_geometry_all_metrics(cloud):
    X, y = cloud
    types = np.arange(400) % 50
    out = geometry(X, y, types)
    assert set(out) == {"n_points", "dim", "cluster_k", *METRIC_NAMES}
    assert out["silhouette"] == pytest.approx(silhouette_score(X, y), abs=1e-6)
    assert out["isoscore"] == pytest.approx(isoscore(X), abs=1e-12)
    assert out["cluster_k"] == 3.0  # the cloud has three well-separated clusters


def test_geometry_skips_what_inputs_do_not_allow(cloud):
    X, _ = cloud
    out = geometry(X, metrics=None)
    assert "silhouette" not in out and "s_inter" not in out and "isoscore" in out
    with pytest.raises(ValueError, match="needs labels"):
        geometry(X, metrics=["silhouette"])
    with pytest.raises(ValueError, match="unknown metric\\(s\\) \\['isotropy'\\]"):
        geometry(X, metrics=["isotropy"])


def test_geometry_samples_rows_consistently(cloud):
    X, y = cloud
    out = geometry(X, y, metrics=["silhouette", "isoscore"], sample=100, seed=3)
    idx = sample_rows(400, 100, 3).numpy()
    assert out["n_points"] == 100
    assert out["silhouette"] == pytest.approx(silhouette(X[idx], y[idx]), abs=1e-12)
    assert sample_rows(400, 1000, 3) is None


def test_resolve_device():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="unknown device|unsupported device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")


def write_formats(tmp_path, X, y):
    paths = {}
    np.save(tmp_path / "X.npy", X)
    paths["npy"] = tmp_path / "X.npy"
    np.savez(tmp_path / "X.npz", embeddings=X, other=np.zeros(3))
    paths["npz"] = tmp_path / "X.npz"
    pd.DataFrame({"embedding": list(X), "label": y}).to_parquet(tmp_path / "X.parquet")
    paths["parquet"] = tmp_path / "X.parquet"
    torch.save({"embeddings": torch.from_numpy(X)}, tmp_path / "X.pt")
    paths["pt"] = tmp_path / "X.pt"
    return paths


def test_load_array_formats(tmp_path, cloud):
    X, y = cloud
    for fmt, path in write_formats(tmp_path, X, y).items():
        np.testing.assert_array_equal(load_array(path), X, err_msg=fmt)
    np.testing.assert_array_equal(load_array(tmp_path / "X.parquet", "label"), y)
    (tmp_path / "y.txt").write_text("\n".join(["pos", "neg"] * 3) + "\n")
    assert list(load_array(tmp_path / "y.txt")) == ["pos", "neg"] * 3
    pd.DataFrame(X[:, :3], columns=["a", "b", "c"]).to_parquet(tmp_path / "wide.parquet")
    np.testing.assert_array_equal(load_array(tmp_path / "wide.parquet"), X[:, :3])


def test_load_array_errors(tmp_path):
    np.savez(tmp_path / "two.npz", a=np.zeros(2), b=np.zeros(2))
    with pytest.raises(InputFileError, match="two.npz: holds several entries \\['a', 'b'\\]; choose one with --key"):
        load_array(tmp_path / "two.npz")
    with pytest.raises(InputFileError, match="no entry named 'c'"):
        load_array(tmp_path / "two.npz", "c")
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(InputFileError, match="bad.npy: is not a NumPy .npy file"):
        load_array(tmp_path / "bad.npy")
    (tmp_path / "x.h5").write_bytes(b"")
    with pytest.raises(InputFileError, match="unsupported file type '.h5'"):
        load_array(tmp_path / "x.h5")


def test_cli_json_matches_library(tmp_path, cloud, capsys):
    X, y = cloud
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    assert (
        main(
            [
                "geometry",
                str(tmp_path / "X.npy"),
                "--labels",
                str(tmp_path / "y.npy"),
                "--format",
                "json",
                "--metrics",
                "isoscore,silhouette",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out == {"n_points": 400.0, "dim": 12.0, "isoscore": isoscore(X), "silhouette": silhouette(X, y)}


def test_cli_table_and_errors(tmp_path, cloud, capsys):
    """`isoflow geometry` prints a table, and refuses labels of another length or a NaN in one line naming the file
    (exit code 2, no traceback). In this process (conftest.isoflow_cli); the entry point's own process:
    test_cli_prepare_and_encode."""
    X, y = cloud
    paths = write_formats(tmp_path, X, y)
    run = lambda *a: isoflow_cli("geometry", *a)  # noqa: E731
    code, err = run(paths["parquet"], "--labels", paths["parquet"], "--labels-key", "label", "--metrics", "silhouette")
    assert code == 0, err
    assert capsys.readouterr().out.split()[-2:] == ["silhouette", f"{silhouette(X, y):.6f}"]
    np.save(tmp_path / "short.npy", y[:10])
    code, err = run(paths["npy"], "--labels", tmp_path / "short.npy")
    assert code == 2 and f"{tmp_path / 'short.npy'}: labels have 10 entries but X has 400 rows" in err
    bad = X.copy()  # the fixture is shared by the module's tests: never change it in place
    bad[3, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    code, err = run(tmp_path / "nan.npy")
    assert code == 2 and "Traceback" not in err
    assert (
        f"{tmp_path / 'nan.npy'}: X contains 1 NaN/inf value(s) in 1 row(s); the first is row 4 (rows counted from 1)"
        in err
    )
