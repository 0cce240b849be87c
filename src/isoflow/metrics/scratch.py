"""Scratch arrays the NumPy metric step reuses from one call to the next.

A fresh array of tens of MB is mapped anew by the allocator on every call and its pages are faulted in on first
touch: at the paper's size (10,662 × 384 float32) that took about 35 ms of a 280 ms silhouette + IsoScore step, one
eighth of it (benchmarks/results/metric_step_parts.json, "fresh arrays" against "reused arrays"). The experiment's
loop measures arrays of one shape after every update, so each role keeps its last array and hands it out again when
shape and dtype match. Per thread; what stays allocated between calls is the last call's scratch, O(n·d) (about
three copies of the input), and the peak is unchanged. The arrays never leave the function that asked for them.
"""

from __future__ import annotations

import threading

import numpy as np

_local = threading.local()


def scratch(role: str, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised array for ``role`` (a name unique to its caller): the one handed out last time when shape and
    dtype match, else a new one that replaces it.

    >>> a = scratch("doc.example", (3, 2), np.float32)
    >>> scratch("doc.example", (3, 2), np.float32) is a, scratch("doc.example", (4, 2), np.float32) is a
    (True, False)
    """
    arrays: dict[str, np.ndarray] = _local.__dict__.setdefault("arrays", {})
    shape, dtype = tuple(shape), np.dtype(dtype)
    kept = arrays.get(role)
    if kept is not None and kept.shape == shape and kept.dtype == dtype:
        return kept
    arrays.pop(role, None)  # freed before the new one is allocated: the peak holds one of them
    arrays[role] = np.empty(shape, dtype)
    return arrays[role]


def release() -> None:
    """Drop this thread's scratch arrays (the memory they hold until the next metric step of another shape)."""
    _local.__dict__.pop("arrays", None)
