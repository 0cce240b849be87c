"""How the blocked n × n metrics compute on a device: the block size (a size policy) and, on the CPU, whose BLAS
multiplies the blocks. One code path for every device; only these two choices differ.

* **Block size.** On a CPU, blocks small enough to stay in cache (the caller's default: 1,024 rows for the
  silhouette, 2,048 for the k-NN search). On a GPU, as few blocks as fit (the block × block matrix and one copy
  within a quarter of the device's free memory), since a GPU is bound by kernel launches, not by cache; except that a
  pass visiting each pair of blocks once (the upper triangle: the silhouette's distance sums, ``upper_triangle``)
  splits n in four (``GPU_SPLIT``) where each block keeps at least ``GPU_MIN_BLOCK`` rows: four blocks do 10 of the
  16 block products and element-wise passes a single block does (62 %), while blocks of thousands of rows keep the
  products at the GEMM rate; a small n (launch-bound) stays one block. Each row block is multiplied by its whole strip
  of columns at once (:func:`triangle_blocks`): one product and one of each pass per row block, not per pair of blocks
  (benchmarks/launches.py counts them). Measured on an H100: docs/performance.md.
  ``ISOFLOW_BLOCK_POLICY=cpu|gpu`` forces one policy (tests force
  the GPU policy on the CPU; it then assumes 2 GiB of free memory).
* **CPU GEMM.** PyTorch's CPU wheel multiplies through MKL, NumPy through OpenBLAS; on some hosts (this project's AMD
  EPYC machines) OpenBLAS is faster on the bare products, which need not make the metric step faster (below).
  ``ISOFLOW_CPU_GEMM=torch|numpy`` chooses; ``auto`` (the default) follows the host's measured choice
  (:mod:`isoflow.cpu_gemm`: a whole metric step timed both ways, NumPy taken only if at least 15 % faster, once per
  host and kept), which a run settles when it resolves its device (:func:`isoflow.run_inputs.run_inputs`); until
  then, torch's. The measurement lives above the metrics because it times them: this module only holds its answer.
  Results agree to rounding (tested to 1e-6); the choice is recorded in each run's JSON.
  With NumPy, the whole metric step stays in NumPy (:func:`numpy_blas`): the silhouette's rescaling, centring,
  products, square roots and per-cluster sums (``silhouette._euclidean_cluster_sums_numpy``) and IsoScore's centring
  and covariance (``isotropy._centred_rescaled``, ``_scatter_matrix``): OpenBLAS's threads keep spinning after a
  product, and torch's OpenMP threads started in between fight them for the same cores (measured here: 3× slower per
  block on 2 cores)."""

from __future__ import annotations

import contextlib
import math
import os

import numpy as np
import torch

GEMM_ENV = "ISOFLOW_CPU_GEMM"
POLICY_ENV = "ISOFLOW_BLOCK_POLICY"
GEMMS = ("auto", "torch", "numpy")
POLICIES = ("auto", "cpu", "gpu")
FORCED_GPU_FREE_BYTES = 2 << 30
GPU_SPLIT = 4
GPU_MIN_BLOCK = 2048


def _setting(env: str, allowed: tuple[str, ...]) -> str:
    value = os.environ.get(env, "auto").strip().lower() or "auto"
    if value not in allowed:
        raise ValueError(f"${env}={value!r}: use one of {', '.join(allowed)}")
    return value


def gemm_setting() -> str:
    """``$ISOFLOW_CPU_GEMM``: ``auto`` (the default), ``torch`` or ``numpy``; anything else is refused."""
    return _setting(GEMM_ENV, GEMMS)


# The host's choice, once :func:`isoflow.cpu_gemm.settle` has measured it or read it back (a run settles it when it
# resolves its device); None until then, and ``auto`` then means torch's.
_host: str | None = None


def use_host_choice(choice: str | None) -> None:
    """Set the host's measured choice (``torch`` or ``numpy``; None: not settled), which ``auto`` follows."""
    global _host
    if choice not in (None, "torch", "numpy"):
        raise ValueError(f"the host's CPU GEMM must be torch or numpy; got {choice!r}")
    _host = choice


# The choice the measurement is timing (:func:`timing`), else None: the setting and the host's choice decide.
_timing: str | None = None


@contextlib.contextmanager
def timing(choice: str):
    """Within the block, ``choice`` whatever the setting (:mod:`isoflow.cpu_gemm` times each choice this way)."""
    global _timing
    if choice not in ("torch", "numpy"):
        raise ValueError(f"a CPU GEMM to time must be torch or numpy; got {choice!r}")
    _timing = choice
    try:
        yield
    finally:
        _timing = None


def cpu_gemm() -> str:
    """The BLAS the CPU block products use: ``torch`` or ``numpy`` (see the module docstring)."""
    if _timing is not None:
        return _timing
    choice = gemm_setting()
    return (_host or "torch") if choice == "auto" else choice


def numpy_blas(a: torch.Tensor) -> bool:
    """Whether ``a``'s products go through NumPy's BLAS: a CPU float32/float64 tensor outside autograd on a host whose
    choice is NumPy. The metrics then do the whole step in NumPy (silhouette, IsoScore's covariance)."""
    return (
        a.device.type == "cpu"
        and a.dtype in (torch.float32, torch.float64)
        and not a.requires_grad
        and cpu_gemm() == "numpy"
    )


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` through the chosen CPU BLAS (no copies: NumPy views of the tensors), or torch's elsewhere."""
    if numpy_blas(a) and numpy_blas(b):
        return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))
    return a @ b


def _policy(device: torch.device) -> str:
    policy = _setting(POLICY_ENV, POLICIES)
    return ("gpu" if device.type == "cuda" else "cpu") if policy == "auto" else policy


def _fitting_rows(device: torch.device, dtype: torch.dtype) -> int:
    """The side of a square matrix that, with one copy, fits in a quarter of the device's free memory."""
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else FORCED_GPU_FREE_BYTES
    return int(math.sqrt(free / 4 / (2 * (torch.finfo(dtype).bits // 8))))


def _gpu_rows(n: int, fits: int, cpu_block: int, upper_triangle: bool) -> int:
    split = math.ceil(n / GPU_SPLIT)
    rows = split if upper_triangle and split >= GPU_MIN_BLOCK else n
    return max(cpu_block, min(rows, fits))


def block_size(
    n: int, device: torch.device | str, dtype: torch.dtype, cpu_block: int, *, upper_triangle: bool = False
) -> int:
    """Rows per block for an n × n blocked computation (see the module docstring); ``upper_triangle``: one that
    visits each pair of blocks once, which a GPU splits in four."""
    device = torch.device(device)
    if _policy(device) == "cpu":
        return cpu_block
    return _gpu_rows(n, _fitting_rows(device, dtype), cpu_block, upper_triangle)


def triangle_blocks(
    n: int, device: torch.device | str, dtype: torch.dtype, cpu_block: int, rows: int | None = None
) -> tuple[int, int]:
    """Rows per block and columns per product of an upper-triangle pass, from one look at the device's free memory
    (a driver call on a GPU, paid once a pass): the rows the caller's (``rows``) or :func:`block_size`'s; the columns
    as many as the rows on a CPU (square blocks, in cache), on a GPU the whole strip right of a row block's start,
    within the memory a square block may take (rows × columns ≤ its area), so that a row block costs one product and
    one of each pass, not one per block pair: on a GPU the host's launches, not the device's work, set the pace."""
    device = torch.device(device)
    if _policy(device) == "cpu":
        rows = rows or cpu_block
        return rows, rows
    fits = _fitting_rows(device, dtype)
    rows = rows or _gpu_rows(n, fits, cpu_block, upper_triangle=True)
    return rows, max(rows, min(n, fits * fits // rows))


def describe(device: torch.device | str) -> dict:
    """What a run's JSON records of these choices."""
    device = torch.device(device)
    return {
        "block_policy": _policy(device),
        "cpu_gemm": cpu_gemm() if device.type == "cpu" else None,
    }
