"""Workflow config files that name what they change on top of another: ``base: config/nonlinear-head.yaml``.

A config with a ``base`` key is its base (itself possibly on a base) with the file's own keys on top: mappings merge key
by key at every depth, anything else (a list, a number) replaces the base's value, and a key set to null removes the
base's (a section the new config does not run). The workflow (rules/config.smk), the
publications and the Makefile read configs through :func:`load` / :func:`resolve`, so a layered config means the same
everywhere. Paths in ``base`` are relative to the repository (where the workflow runs), as every other path.

>>> merge({"a": 1, "s": {"x": 1, "y": [1, 2]}}, {"s": {"y": [3]}, "b": 2})
{'a': 1, 's': {'x': 1, 'y': [3]}, 'b': 2}
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A config's base is missing, unreadable or circular (the message names the file and the fix)."""


def merge(base: dict, top: dict) -> dict:
    """``top`` over ``base``: mappings merged recursively, other values replaced, a key set to null removed (a new
    dict; inputs untouched).

    >>> merge({"pretrain": {"models": {}}, "seeds": [0]}, {"pretrain": None})
    {'seeds': [0]}"""
    out = dict(base)
    for key, value in top.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve(config: dict, root: str | os.PathLike = ".", *, named: str = "the config") -> dict:
    """``config`` with its ``base`` chain merged under it (module docstring); the ``base`` key itself removed."""
    chain, seen = [config], []
    base = config.get("base")
    while base:
        path = Path(root) / base
        if str(path) in seen:
            raise ConfigError(f"{named}: base: {base} comes back to itself ({' -> '.join([*seen, str(path)])})")
        seen.append(str(path))
        try:
            layer = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ConfigError(f"{named}: base: {base} does not exist; fix the path (relative to {root})") from None
        if not isinstance(layer, dict):
            raise ConfigError(f"{named}: base: {base} is not a mapping of config keys")
        chain.append(layer)
        base = layer.get("base")
    merged: dict = {}
    for layer in reversed(chain):
        merged = merge(merged, layer)
    merged.pop("base", None)
    return merged


def load(path: str | os.PathLike, root: str | os.PathLike = ".") -> dict:
    """A config file, its base chain merged under it."""
    config = yaml.safe_load(Path(root, path).read_text(encoding="utf-8")) or {}
    return resolve(config, root, named=str(path))
