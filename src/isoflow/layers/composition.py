"""What a layer's clusters hold: symbols against words, first tokens, the most frequent types."""

from __future__ import annotations

from collections import Counter

import numpy as np
import torch

_PIECE_MARKS = ("##", "Ġ", "▁", "Ċ")


def is_symbol(token: str) -> bool:
    """Whether a type is a symbol (punctuation, brackets, quotes: no letter or digit once the tokenizer's word-piece
    marks ``##``, ``Ġ``, ``▁`` are removed), as Cai et al. split "symbol" from "word" tokens."""
    core = str(token)
    for mark in _PIECE_MARKS:
        core = core.replace(mark, "")
    return bool(core) and not any(ch.isalnum() for ch in core)


def cluster_composition(
    clusters: torch.Tensor, types: np.ndarray, positions: np.ndarray | None, *, top: int = 8
) -> list[dict]:
    """What each cluster of a sample holds: its size and share of the sample, the share of symbol tokens and of
    first tokens (position 0) in it, its mean position (NaN without positions: static vectors), and its most frequent
    types (``top`` of them, with counts)."""
    labels = clusters.cpu().numpy()
    symbols = np.array([is_symbol(t) for t in types])
    rows = []
    for c in np.unique(labels):
        members = labels == c
        counts = Counter(np.asarray(types, dtype=object)[members].tolist()).most_common(top)
        rows.append(
            {
                "cluster": int(c),
                "size": int(members.sum()),
                "share": float(members.mean()),
                "share_symbols": float(symbols[members].mean()),
                "share_first_position": float((positions[members] == 0).mean())
                if positions is not None
                else float("nan"),
                "mean_position": float(positions[members].mean()) if positions is not None else float("nan"),
                "top_types": " ".join(f"{t}({n})" for t, n in counts),
            }
        )
    return rows
