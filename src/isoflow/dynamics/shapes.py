"""A shape across training, read as docs/verdicts.md ("A shape across training") writes it, before any series is
measured: each seed's curve on its own (the seed is the unit), a change counted only where it is at least
:data:`DELTA` (5 %) of the curve's value where it starts, and one of the vocabulary's words over the seeds.

A curve is a measure's values in order (over checkpoint steps, or over layers), positive (RankMe, TwoNN, LID, λ_max /
Σλ, α-ReQ). The shapes: :func:`peak` (a rise then a fall; the opposite, :func:`dip`), :func:`three_phases` (Li et al.: a
fall, a rise, a fall; the opposite, :func:`expansion_only`), :func:`three_phases_of_decay` (the same phases in α-ReQ,
which moves against RankMe: a rise, a fall, a rise; the opposite, :func:`compression_only`), :func:`late_rise` (Godey et
al.; the opposite, :func:`late_fall`), and a plain rise or fall over the whole curve.

Examples
--------
>>> from isoflow.dynamics.shapes import read_shape
>>> read_shape("three phases", [[10, 6, 9, 14, 11], [10, 5, 8, 15, 12], [9, 6, 7, 12, 10]])
'reproduced'
>>> read_shape("peak", [[1, 2, 1], [1, 1.02, 1], [1, 2, 1]])
'inconclusive (in 2 of 3 seeds)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..reporting.verdicts import VERDICTS

DELTA = 0.05  # the smallest change a rule counts, relative to the value where it starts (docs/verdicts.md)

Curve = Sequence[float]


def rises(m: Curve, a: int, b: int, delta: float = DELTA) -> bool:
    """m rises from point ``a`` to point ``b``: m[b] ≥ (1 + δ) · m[a]."""
    return m[b] >= (1 + delta) * m[a]


def falls(m: Curve, a: int, b: int, delta: float = DELTA) -> bool:
    """m falls from point ``a`` to point ``b``: m[b] ≤ (1 − δ) · m[a]."""
    return m[b] <= (1 - delta) * m[a]


def _interior_extreme(m: Curve, pick: Callable) -> int | None:
    inside = range(1, len(m) - 1)
    return pick(inside, key=lambda i: m[i]) if len(m) >= 3 else None


def peak(m: Curve) -> bool:
    """A bell: with p the interior point of the largest value, a rise from the first point to p and a fall from p to
    the last."""
    p = _interior_extreme(m, max)
    return p is not None and rises(m, 0, p) and falls(m, p, len(m) - 1)


def dip(m: Curve) -> bool:
    """A peak's opposite: a fall to the interior point of the smallest value, then a rise to the last."""
    p = _interior_extreme(m, min)
    return p is not None and falls(m, 0, p) and rises(m, p, len(m) - 1)


def _phases(m: Curve, way: int) -> bool:
    """Three phases running ``way`` (1: RankMe's, a fall, a rise, a fall; -1: α-ReQ's, a rise, a fall, a rise): with
    M the point of the most extreme value after the first (the largest for 1) and N that of the opposite extreme
    strictly between the first and M, a move against ``way`` from the first to N, with it from N to M, against it
    from M to the last."""
    if len(m) < 4:
        return False
    far, near = (max, min) if way == 1 else (min, max)
    turn = far(range(1, len(m)), key=lambda i: m[i])
    if turn < 2:
        return False
    back = near(range(1, turn), key=lambda i: m[i])
    against, along = (falls, rises) if way == 1 else (rises, falls)
    return against(m, 0, back) and along(m, back, turn) and against(m, turn, len(m) - 1)


def _only(m: Curve, way: int) -> bool:
    """Three phases' opposite: a move ``way`` from the first point to its extreme, and none back of δ after it."""
    far, along, against = (max, rises, falls) if way == 1 else (min, falls, rises)
    turn = far(range(len(m)), key=lambda i: m[i])
    return along(m, 0, turn) and not any(against(m, turn, j) for j in range(turn + 1, len(m)))


def three_phases(m: Curve) -> bool:
    """Li et al.'s phases: with M the point of the largest value after the first and N the point of the smallest
    strictly between the first and M, a fall from the first to N, a rise from N to M and a fall from M to the last."""
    return _phases(m, 1)


def expansion_only(m: Curve) -> bool:
    """Three phases' opposite: a rise from the first point to the largest value and no fall of δ after it."""
    return _only(m, 1)


def three_phases_of_decay(m: Curve) -> bool:
    """Li et al.'s phases as α-ReQ shows them (the decay rises where RankMe falls): with M the point of the smallest
    value after the first and N the point of the largest strictly between the first and M, a rise from the first to
    N, a fall from N to M and a rise from M to the last."""
    return _phases(m, -1)


def compression_only(m: Curve) -> bool:
    """The decay's three phases' opposite: a fall from the first point to the smallest value and no rise of δ after
    it."""
    return _only(m, -1)


def _half(steps: Sequence[int]) -> int:
    """The first point at or past half the steps."""
    return next(i for i, s in enumerate(steps) if s >= steps[-1] / 2)


def late_rise(m: Curve, steps: Sequence[int]) -> bool:
    """Godey et al.'s saturation: a rise from the first checkpoint at or past half the steps to the last."""
    return rises(m, _half(steps), len(m) - 1)


def late_fall(m: Curve, steps: Sequence[int]) -> bool:
    return falls(m, _half(steps), len(m) - 1)


# Each shape and its opposite, as docs/verdicts.md pairs them.
SHAPES: dict[str, tuple[Callable[[Curve], bool], Callable[[Curve], bool]]] = {
    "peak": (peak, dip),
    "three phases": (three_phases, expansion_only),
    "three phases of the decay": (three_phases_of_decay, compression_only),
    "rise": (lambda m: rises(m, 0, len(m) - 1), lambda m: falls(m, 0, len(m) - 1)),
    "fall": (lambda m: falls(m, 0, len(m) - 1), lambda m: rises(m, 0, len(m) - 1)),
}


def read_shape(shape: str, curves: Sequence[Curve], steps: Sequence[int] | None = None) -> str:
    """The word for ``shape`` over ``curves`` (one a seed): **reproduced** in every seed, **contradicted** where every
    seed has its opposite, **not seen (could have detected a change of 5 %)** in none, **inconclusive (in k of n
    seeds)** in some; **untested (...)** without curves or with an empty value. ``late rise`` needs the curves'
    ``steps``."""
    if shape == "late rise":
        if steps is None:
            raise ValueError("a late rise is read against the checkpoints' steps; give steps")
        found, opposite = (lambda m: late_rise(m, steps)), (lambda m: late_fall(m, steps))
    elif shape in SHAPES:
        found, opposite = SHAPES[shape]
    else:
        raise ValueError(f"unknown shape {shape!r}; the shapes: {', '.join([*SHAPES, 'late rise'])}")
    curves = [list(map(float, m)) for m in curves]
    if not curves:
        return f"{VERDICTS[4]} (no series measured)"
    if any(v != v for m in curves for v in m):  # NaN: a value left empty
        return f"{VERDICTS[4]} (a value left empty at a checkpoint)"
    seen = sum(found(m) for m in curves)
    if seen == len(curves):
        return VERDICTS[0]
    if all(opposite(m) for m in curves):
        return VERDICTS[1]
    if seen == 0:
        return f"{VERDICTS[2]} (could have detected a change of {DELTA:.0%})"
    return f"{VERDICTS[3]} (in {seen} of {len(curves)} seeds)"
