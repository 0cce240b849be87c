"""The points of every layer, written as the encoder produces them, read back one layer at a time.

A model gives all its layers at once for a batch of sentences, but the metrics need one layer's points for the
whole corpus. On disk (the default), each layer is a ``.npy`` file written through a memory map: peak memory is one
layer's points (n × d float32) while measuring, not all (L + 1) layers'. In memory, every layer stays in RAM (small
runs, and the test that streaming changes nothing). A kept store (``keep``) writes into ``directory`` itself, opens the
files already there and leaves them on close: an interrupted analysis resumes from them
(:mod:`isoflow.layers.partial`)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import numpy as np

STATE_BYTES = np.dtype(np.float32).itemsize  # a stored state's coordinate


class NotEnoughSpace(OSError):
    """The states would not fit where they go (the message names the place, the need, what is free and the fix)."""


def states_bytes(n_layers: int, n_points: int, dim: int) -> int:
    """What a store of ``n_layers`` layers × ``n_points`` points × ``dim`` float32 coordinates takes, on disk or in
    memory: the layer analysis' largest allocation after the model's weights (docs/performance.md)."""
    return n_layers * n_points * dim * STATE_BYTES


def _allocated(paths) -> int:
    """The bytes the existing files among ``paths`` hold on disk (a kept store's, resumed: already paid for)."""
    return sum(p.stat().st_blocks * 512 for p in paths if p.is_file())


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none: not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def release_freed_memory() -> None:
    """Give the memory the process has freed back to the system (glibc's ``malloc_trim``; nothing elsewhere): freed
    blocks below glibc's mapping threshold otherwise stay resident, so that a stage's peak would hold the stages
    before it too (a layer run's sums, 2.5 MB a scatter at d = 576, are such blocks)."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


MAPPED_FROM = 2**20  # while CKA runs, blocks of at least this many bytes are mapped apart (large_blocks_mapped)
DYNAMIC_MAX = 32 * 2**20  # the highest mapping threshold glibc's dynamic rule reaches on 64-bit systems
M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)


@contextlib.contextmanager
def large_blocks_mapped(threshold: int = MAPPED_FROM):
    """Inside, glibc maps every block of at least ``threshold`` bytes apart and unmaps it when it is freed; after,
    its threshold is the highest its own rule would have raised it to. Why: glibc raises its mapping threshold to the
    largest block freed (up to 32 MiB), after which blocks of that size come from the heap and, freed between
    longer-lived ones, stay resident: the layer-by-layer CKA of a 576-wide model's 31 states, allocating 11–23 MB
    copies pair after pair, held about 1 GB more than its live tensors so (docs/performance.md). Nothing elsewhere
    (not glibc): no change."""
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, threshold)
    try:
        yield
    finally:
        if mallopt is not None:
            mallopt(M_MMAP_THRESHOLD, DYNAMIC_MAX)


def _libc_function(name: str):
    """glibc's function ``name`` (None where the C library is not glibc or lacks it)."""
    import ctypes
    import ctypes.util

    found = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(found), name) if found else None
    except (OSError, AttributeError):
        return None


def check_space(
    n_layers: int, n_points: int, dim: int, directory: str | Path | None, kept=(), sums_bytes: int = 0
) -> None:
    """Refuse, in one line and before anything is written, a store that would not fit: on disk, the free space of
    ``directory`` (plus what the ``kept`` files of a resumed store hold already); in memory (``directory`` None),
    the memory available now. ``sums_bytes``: the types' sums a run keeping its sample writes beside the states. A
    memory-mapped file on a full disk would otherwise end the process with SIGBUS mid-encoding."""
    need = states_bytes(n_layers, n_points, dim) + sums_bytes
    shape = f"{n_layers} layers x {n_points:,} points x {dim} dims x {STATE_BYTES} B"
    shape += f", and {sums_bytes / 1e9:.1f} GB of their types' sums" if sums_bytes else ""
    if directory is not None:
        where = Path(directory)
        probe = next(p for p in (where, *where.parents) if p.exists())  # the folder may not exist yet
        free = shutil.disk_usage(probe).free + _allocated(kept)
        if need > free:
            raise NotEnoughSpace(
                f"{where}: the layers' states need {need / 1e9:.1f} GB of disk ({shape}), {free / 1e9:.1f} GB is "
                "free; measure fewer layers (--layers), keep only the samples' points (--states sample), fewer tokens "
                "(--max-tokens), or write the run elsewhere (--out)"
            )
        return
    free = available_memory()
    if free is not None and need > free:
        raise NotEnoughSpace(
            f"the layers' states need {need / 1e9:.1f} GB of memory ({shape}), {free / 1e9:.1f} GB is available; "
            "keep them on disk (streaming, the default), measure fewer layers (--layers) or fewer tokens (--max-tokens)"
        )


def types_file(directory, layer: int) -> Path:
    """Where a run keeping its sample keeps its ``layer``-th measured layer's types' sums (isoflow.layers.streamed)."""
    return Path(directory) / f"types{layer}.f64"


def _layer_file(directory, layer: int) -> Path:
    """Where a store in ``directory`` keeps its ``layer``-th layer's points."""
    return Path(directory) / f"layer{layer}.npy"


class LayerStore:
    """(n_layers, n_points, dim) float32 points, filled batch by batch, read layer by layer."""

    def __init__(
        self,
        n_layers: int,
        n_points: int,
        dim: int,
        directory: str | Path | None = None,
        *,
        keep: bool = False,
        sums_bytes: int = 0,
    ):
        self.n_layers, self.n_points, self.dim = n_layers, n_points, dim
        self.filled = 0
        self._dir = None
        self._keep = keep and directory is not None
        files = (f(directory, i) for i in range(n_layers) for f in (_layer_file, types_file))
        kept = list(files) if self._keep else []
        check_space(n_layers, n_points, dim, directory, kept, sums_bytes)
        if directory is None:
            self._layers = [np.empty((n_points, dim), dtype=np.float32) for _ in range(n_layers)]
        else:
            Path(directory).mkdir(parents=True, exist_ok=True)
            self._dir = Path(directory) if keep else Path(tempfile.mkdtemp(prefix=".layer-states.", dir=directory))
            self._layers = [self._open(_layer_file(self._dir, i)) for i in range(n_layers)]

    def _open(self, path: Path) -> np.ndarray:
        shape = (self.n_points, self.dim)
        if self._keep and path.is_file():
            found = np.load(path, mmap_mode="r+")
            if found.shape == shape and found.dtype == np.float32:
                return found
        return np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=shape)

    @property
    def on_disk(self) -> bool:
        return self._dir is not None

    @property
    def directory(self) -> Path | None:
        """The folder of its files (None: in memory), where a run keeps its types' sums beside them."""
        return self._dir

    def append(self, layers: list[np.ndarray]) -> None:
        if len(layers) != self.n_layers:
            raise ValueError(f"expected {self.n_layers} layers, got {len(layers)}")
        n = layers[0].shape[0]
        if self.filled + n > self.n_points:
            raise ValueError(f"more points than announced ({self.filled + n} > {self.n_points})")
        for store, points in zip(self._layers, layers):
            store[self.filled : self.filled + n] = points
        self.filled += n

    def layer(self, index: int) -> np.ndarray:
        """One layer's points: read from disk into memory (a copy) or the in-memory array."""
        if not 0 <= index < self.n_layers:
            raise IndexError(f"layer {index} out of range 0..{self.n_layers - 1}")
        points = self._layers[index][: self.filled]
        return np.array(points) if self.on_disk else points

    def rows(self, index: int, rows: np.ndarray) -> np.ndarray:
        """Some of one layer's points (``rows``: sorted indices), read without the rest of the layer."""
        if not 0 <= index < self.n_layers:
            raise IndexError(f"layer {index} out of range 0..{self.n_layers - 1}")
        return np.array(self._layers[index][: self.filled][rows])

    def close(self) -> None:
        for layer in self._layers:
            if isinstance(layer, np.memmap):
                layer.flush()
        self._layers = []
        if self._dir is not None and not self._keep:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> LayerStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
