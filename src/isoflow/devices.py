"""Device selection: 'auto' means CUDA when present, else CPU; a missing device is a clear error."""

from __future__ import annotations

import torch


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError as exc:
        raise ValueError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device {name!r} requested but CUDA is not available on this machine; use --device cpu or auto"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(
                f"device {name!r} does not exist: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    elif dev.type != "cpu":
        raise ValueError(f"unsupported device {name!r}; use auto, cpu, cuda or cuda:N")
    return dev
