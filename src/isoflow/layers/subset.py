"""Which of a model's layers an analysis measures (``isoflow layers --layers``): a subset spelled before the model is
loaded, resolved against its number of states once it is.

A spec is items separated by commas, each a state's index (0 = the input embeddings, 1..L the blocks; negative from
the end: -1 = the last) or a Python slice ``start:stop:step`` over the states: ``::4`` every fourth from the
embeddings, ``::4,-1`` the same and the last, ``8:`` from the eighth on. ``None`` (the default) is every layer.

Examples
--------
>>> from isoflow.layers.subset import chosen_layers
>>> chosen_layers("::4,-1", 33)   # a 32-block model: every fourth state, and the last
[0, 4, 8, 12, 16, 20, 24, 28, 32]
>>> chosen_layers(None, 3)
[0, 1, 2]
"""

from __future__ import annotations

import re

ITEM = re.compile(r"-?\d+|(-?\d+)?:(-?\d+)?(:-?[1-9]\d*)?")


def check_spec(spec: str | None) -> None:
    """Refuse, in one line naming the fix, a spec that is not indices and slices (before anything is loaded)."""
    if spec is None:
        return
    bad = [item for item in spec.split(",") if not ITEM.fullmatch(item.strip())]
    if bad:
        raise ValueError(
            f"--layers {spec!r}: {bad[0].strip()!r} is neither a layer's index nor a slice; give e.g. "
            "0,6,12 or ::4,-1 (every fourth and the last)"
        )


def chosen_layers(spec: str | None, n_states: int) -> list[int]:
    """The states ``spec`` names among ``n_states`` (0..n_states − 1), ascending, each once; an index out of range is
    refused in one line naming the model's range."""
    check_spec(spec)
    if spec is None:
        return list(range(n_states))
    chosen: set[int] = set()
    for item in (part.strip() for part in spec.split(",")):
        if ":" in item:
            start, stop, *step = (int(x) if x else None for x in item.split(":"))
            chosen.update(range(n_states)[slice(start, stop, step[0] if step else None)])
            continue
        index = int(item)
        if not -n_states <= index < n_states:
            raise ValueError(
                f"--layers {spec!r}: layer {index} is out of range; the model has states 0..{n_states - 1}"
            )
        chosen.add(index % n_states)
    if not chosen:
        raise ValueError(f"--layers {spec!r} names none of the model's states 0..{n_states - 1}")
    return sorted(chosen)
