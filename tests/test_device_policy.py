"""The device policy of the blocked metrics: the CPU BLAS choice and the block-size policy change speed, never the
result (scikit-learn and the IsoScore package to 1e-6 in float64, 1e-5 in float32, whichever BLAS and policy)."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest
import torch
from conftest import make_cloud
from IsoScore.IsoScore import IsoScore
from sklearn.metrics import silhouette_score
from sklearn.neighbors import NearestNeighbors

from isoflow import cpu_gemm
from isoflow.metrics import device_policy, isoscore, knn_distances, silhouette
from isoflow.metrics.isotropy import isoscore_and_star_tensor
from isoflow.run_inputs import run_inputs


@pytest.fixture
def cloud():
    return make_cloud("clustered", 1500, 24, 7)


@pytest.mark.parametrize("gemm", ["torch", "numpy"])
@pytest.mark.parametrize("policy", ["cpu", "gpu"])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-6), (np.float32, 1e-5)])
def test_same_result_whatever_the_blas_and_block_policy(cloud, monkeypatch, gemm, policy, dtype, tol):
    monkeypatch.setenv(device_policy.GEMM_ENV, gemm)
    monkeypatch.setenv(device_policy.POLICY_ENV, policy)
    X, y = cloud
    assert device_policy.cpu_gemm() == gemm
    assert device_policy.block_size(1500, "cpu", torch.float32, 1024) == (
        1024 if policy == "cpu" else 1500
    )  # GPU: one block
    assert silhouette(X.astype(dtype), y) == pytest.approx(silhouette_score(X, y), abs=tol)
    assert silhouette(X.astype(dtype), y, block=100) == pytest.approx(silhouette_score(X, y), abs=tol)
    Xd = X.astype(dtype).astype(np.float64)  # the points as given; distances are recomputed exactly in float64
    d, _ = NearestNeighbors(n_neighbors=6).fit(Xd).kneighbors(Xd)
    np.testing.assert_allclose(knn_distances(X.astype(dtype), 5).numpy(), d[:, 1:], atol=1e-9)
    # IsoScore's covariance goes through the same BLAS (n >= dim), or the Gram matrix (n < dim)
    for points in (Xd, Xd[:10]):
        reference = float(IsoScore(torch.from_numpy(points)))
        assert isoscore(points.astype(dtype)) == pytest.approx(reference, abs=tol)
        iso, _, _ = isoscore_and_star_tensor(torch.from_numpy(points.astype(dtype)), None, 0.0)
        assert float(iso) == pytest.approx(reference, abs=tol)


@pytest.mark.parametrize("many_clusters_path", [False, True])
@pytest.mark.parametrize("dtype, tol, between_blas", [(np.float64, 1e-6, 1e-10), (np.float32, 1e-5, 1e-6)])
def test_numpy_path_with_near_duplicate_points(monkeypatch, dtype, tol, between_blas, many_clusters_path):
    """NumPy's path takes square roots without clamping first and redoes a block whose sums came out NaN: on points
    repeated many times (squared distances that round below zero) it still gives scikit-learn's value, and the
    torch path's, with blocks smaller than the data."""
    from isoflow.metrics import encode_labels
    from isoflow.metrics.silhouette import _augmented_numpy, silhouette_tensor

    X, y = make_cloud("clustered", 300, 24, 3)
    X = np.concatenate([X, X[:150], X[:150]]).astype(dtype)
    y = np.concatenate([y, y[:150], y[:150]])
    left, right = _augmented_numpy(X)
    squared = left @ right.T
    np.fill_diagonal(squared, 0.0)
    assert (squared < 0).any()  # the case is real: squared distances between two points round below zero
    if many_clusters_path:  # strips summed by a sparse product instead of blocks (the torch side: index_add_)
        monkeypatch.setattr(importlib.import_module("isoflow.metrics.silhouette"), "SCATTER_ABOVE_K", 1)
    monkeypatch.setenv(device_policy.GEMM_ENV, "numpy")
    clusters = encode_labels(torch.from_numpy(y), len(y))
    got = float(silhouette_tensor(torch.from_numpy(X), clusters, block=128))
    assert got == pytest.approx(silhouette_score(X.astype(np.float64), y), abs=tol)
    monkeypatch.setenv(device_policy.GEMM_ENV, "torch")
    assert got == pytest.approx(float(silhouette_tensor(torch.from_numpy(X), clusters, block=128)), abs=between_blas)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1.0, 2.0**40, 2.0**-40])  # 2**±40: outside 2**±32, the rows are rescaled
def test_numpy_centring_and_rescaling(dtype, scale):
    """The NumPy path's centring: the float64 mean from chunked BLAS sums within 32 eps·mean|a| (eps of the input's
    dtype) of NumPy's float64 mean (2,500 rows: three chunks); rows rescaled by 2**-e only outside 2**±32; written
    into a strided view."""
    from isoflow.metrics._validate import _chunked_column_means, centred_rescaled_numpy

    rng = np.random.default_rng(3)
    a = ((rng.normal(size=(2500, 7)) + 5.0) * scale).astype(dtype)
    reference = a.mean(axis=0, dtype=np.float64)
    bound = 32 * float(np.finfo(dtype).eps) * np.abs(a).mean(axis=0, dtype=np.float64)
    assert np.all(np.abs(_chunked_column_means(a) - reference) <= bound)
    out = np.empty((2500, 9), dtype=dtype)[:, 1:8]
    e = centred_rescaled_numpy(a, out)
    assert e == (0 if scale == 1.0 else np.frexp(np.abs(a).max())[1])
    expected = (a.astype(np.float64) - reference) * 2.0**-e
    assert np.allclose(out, expected, rtol=0, atol=16 * float(np.finfo(dtype).eps) * float(np.abs(a).max()) * 2.0**-e)


def test_gpu_policy_splits_n_in_four_within_free_memory(monkeypatch):
    monkeypatch.setenv(device_policy.POLICY_ENV, "gpu")
    # 2 GiB assumed free on the CPU: a quarter of it holds two float32 8192 x 8192 matrices.
    assert device_policy.block_size(100_000, "cpu", torch.float32, 1024) == 8192
    assert device_policy.block_size(40_000, "cpu", torch.float64, 1024) == 5792
    # n in four where a block keeps 2,048 rows (the upper triangle: 10 of 16 block products), else one block
    assert device_policy.block_size(20_000, "cpu", torch.float64, 1024, upper_triangle=True) == 5000
    assert device_policy.block_size(10_662, "cpu", torch.float32, 1024, upper_triangle=True) == 2666
    assert device_policy.block_size(2_275, "cpu", torch.float32, 1024, upper_triangle=True) == 2275
    # a pass over all columns per row block (the k-NN search) gains nothing from the split: as few blocks as fit
    assert device_policy.block_size(10_662, "cpu", torch.float32, 2048) == 8192
    assert device_policy.block_size(500, "cpu", torch.float32, 1024) == 1024  # never below the CPU block


def test_gpu_policy_takes_each_row_blocks_strip_in_one_product(monkeypatch):
    """On a GPU the upper-triangle pass multiplies a row block by every column right of its start at once, within the
    memory of a square block; on a CPU its blocks stay square."""
    monkeypatch.setenv(device_policy.POLICY_ENV, "cpu")
    assert device_policy.triangle_blocks(10_662, "cpu", torch.float32, 1024) == (1024, 1024)
    monkeypatch.setenv(device_policy.POLICY_ENV, "gpu")
    assert device_policy.triangle_blocks(10_662, "cpu", torch.float32, 1024) == (2666, 10_662)  # 4 products, not 10
    assert device_policy.triangle_blocks(100_000, "cpu", torch.float32, 1024) == (8192, 8192)  # 2 GiB: one block
    assert device_policy.triangle_blocks(100_000, "cpu", torch.float32, 1024, rows=2048) == (2048, 32_768)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-5)])
def test_strips_narrower_than_the_rest_of_the_row(cloud, monkeypatch, dtype, tol):
    """Strips that memory cuts short of the row's end (256 float32 or 127 float64 columns for 100-row blocks, neither
    a multiple of the rows): every pair counted once each way; scikit-learn's value, as with square blocks."""
    from isoflow.metrics.silhouette import silhouettes

    monkeypatch.setenv(device_policy.GEMM_ENV, "torch")
    monkeypatch.setenv(device_policy.POLICY_ENV, "gpu")
    monkeypatch.setattr(device_policy, "FORCED_GPU_FREE_BYTES", 32 * 160**2)
    assert device_policy.triangle_blocks(1500, "cpu", getattr(torch, np.dtype(dtype).name), 1024, rows=100) == (
        100,
        256 if dtype == np.float32 else 127,
    )
    X, y = cloud
    other = np.arange(1500) % 3
    assert silhouettes(X.astype(dtype), [y, other], block=100) == pytest.approx(
        [silhouette_score(X, y), silhouette_score(X, other)], abs=tol
    )


def test_settings_are_checked_and_recorded(monkeypatch):
    monkeypatch.setenv(device_policy.GEMM_ENV, "mkl")
    with pytest.raises(ValueError, match=r"\$ISOFLOW_CPU_GEMM='mkl': use one of auto, torch, numpy"):
        device_policy.cpu_gemm()
    monkeypatch.setenv(device_policy.GEMM_ENV, "auto")
    monkeypatch.delenv(device_policy.POLICY_ENV, raising=False)
    monkeypatch.setattr(device_policy, "_host", None)
    assert device_policy.cpu_gemm() == "torch"  # auto, not settled: torch's
    device_policy.use_host_choice("numpy")
    assert device_policy.describe("cpu") == {"block_policy": "cpu", "cpu_gemm": "numpy"}  # auto follows the host
    with pytest.raises(ValueError, match="torch or numpy; got 'mkl'"):
        device_policy.use_host_choice("mkl")


def test_the_measured_choice_is_kept_per_host(tmp_path, monkeypatch):
    """auto: measured once per host and kept, so that later runs on the host choose the same BLAS; a run settles it
    when it resolves a CPU, and only under auto."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(device_policy.GEMM_ENV, "auto")
    monkeypatch.setattr(device_policy, "_host", None)
    cpu_gemm.host_choice.cache_clear()
    calls = []
    monkeypatch.setattr(cpu_gemm, "measure", lambda: calls.append(1) or "numpy")
    run_inputs(device="cpu")
    assert device_policy.cpu_gemm() == "numpy" and len(calls) == 1
    cpu_gemm.host_choice.cache_clear()  # a new process
    device_policy.use_host_choice(None)
    monkeypatch.setattr(cpu_gemm, "measure", lambda: calls.append(1) or "torch")
    cpu_gemm.settle(torch.device("cpu"))
    assert device_policy.cpu_gemm() == "numpy" and len(calls) == 1  # read back, not measured again
    assert json.loads((tmp_path / "isoflow/cpu-gemm.json").read_text()) == {cpu_gemm.host_key(): "numpy"}
    cpu_gemm.host_choice.cache_clear()
    device_policy.use_host_choice(None)
    monkeypatch.setenv(device_policy.GEMM_ENV, "torch")
    cpu_gemm.settle(torch.device("cpu"))  # a forced choice: nothing read or measured
    assert device_policy._host is None and cpu_gemm.host_choice.cache_info().misses == 0
    cpu_gemm.host_choice.cache_clear()


@pytest.mark.slow
def test_the_measurement_times_both_paths_and_leaves_the_setting_alone(monkeypatch):
    """auto's measurement runs the real metric step once with each choice (both seen by the metrics while it times
    them), then cpu_gemm() answers from the setting again."""
    monkeypatch.setenv(device_policy.GEMM_ENV, "torch")
    seen = []
    silhouette_module = importlib.import_module("isoflow.metrics.silhouette")  # the module, not the function
    real = device_policy.numpy_blas
    monkeypatch.setattr(silhouette_module, "numpy_blas", lambda a: seen.append(device_policy.cpu_gemm()) or real(a))
    assert cpu_gemm.measure() in ("torch", "numpy")
    assert {"numpy", "torch"} <= set(seen)
    assert device_policy.cpu_gemm() == "torch" and device_policy._timing is None
