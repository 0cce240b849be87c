"""One vocabulary for what a measurement says of a published claim, a numeric rule behind each word (docs/verdicts.md).

A claim is an effect with a direction (the paper's sign; its size where it gives one). Ours is an interval of that
effect over the unit of replication — the seed, for a claim about a training procedure
(:func:`isoflow.reporting.significance.seed_interval`) — and the effect the test could have detected
(:func:`isoflow.reporting.significance.detectable_effect`: 80 % power at α = 0.05, from the seeds' spread):

==================  ===================================================================================================
word                rule
==================  ===================================================================================================
``untested``        no test of the claim was made, and the reason is said: the model or task is not of the kind the
                    paper measured, or an intervention's manipulation check failed (the intervention did not move the
                    quantity it acts on, so its downstream effect says nothing of it)
``reproduced``      the 95 % interval excludes 0 on the claimed side
``contradicted``    the 95 % interval excludes 0 on the other side
``not seen``        the interval includes 0, and the test could have detected an effect as large as the claimed one
                    (detectable effect ≤ |claimed|): written ``not seen (could have detected ≥ X)``
``inconclusive``    the interval includes 0, and the test could not have detected the claimed effect (detectable
                    effect > |claimed|, or no size is claimed and none is computed)
==================  ===================================================================================================

Whether the paper's own number lies inside our interval is said beside the word (:func:`agreement`), not in it: a
reproduced direction with a smaller size reads "reproduced; the paper's −0.9 outside [−0.4, −0.2]".
"""

from __future__ import annotations

import math

from .significance import holm

VERDICTS = ("reproduced", "contradicted", "not seen", "inconclusive", "untested")


def verdict(
    claimed: float,
    low: float,
    high: float,
    *,
    detectable: float | None = None,
    untested_because: str | None = None,
    p_adjusted: float | None = None,
) -> str:
    """The word (module docstring) for a claimed effect ``claimed`` (its sign the claim's direction; its size, where the
    paper gives one, else ±inf for a direction alone: ±1 is a size of 1 in the measure's units, all that accuracy can
    move, but small for an intrinsic dimension) and our 95 % interval [``low``, ``high``] over the unit of
    replication; ``detectable``: the smallest effect the test detects with 80 % power; ``untested_because``: why no
    test was made (then nothing else is read); ``p_adjusted``: the test's p-value corrected for its family (Holm's,
    :func:`isoflow.reporting.significance.holm`), where it is one of several: an interval that excludes 0 counts only
    where that p is below 0.05, else the word is read as if the interval reached 0.

    >>> verdict(-0.8, -0.81, -0.79)
    'reproduced'
    >>> verdict(1.0, -0.05, 0.02, detectable=0.012)   # a direction claimed, a test sharp enough: it is not there
    'not seen (could have detected ≥ 0.012)'
    >>> verdict(0.01, -0.05, 0.02, detectable=0.04)   # the claimed size is below what the test can see
    'inconclusive'
    >>> verdict(-math.inf, -3.5, 0.9, detectable=5.6)   # a direction alone: the test's reach is stated, not judged
    'not seen (could have detected ≥ 5.6)'
    >>> verdict(1.0, 0.0, 0.0, untested_because="the penalty did not move IsoScore*")
    'untested (the penalty did not move IsoScore*)'
    >>> verdict(math.inf, 0.001, 0.02, detectable=0.015, p_adjusted=0.09)   # one of a family: Holm's p decides
    'not seen (could have detected ≥ 0.015)'"""
    if untested_because:
        return f"untested ({untested_because})"
    if claimed == 0 or any(math.isnan(v) for v in (claimed, low, high)):
        raise ValueError(f"a verdict needs a claimed direction and an interval; got {claimed}, [{low}, {high}]")
    if low > high:
        raise ValueError(f"the interval [{low}, {high}] is reversed")
    side = math.copysign(1.0, claimed)
    low, high = as_read(low, high, p_adjusted)
    if (low > 0 and side > 0) or (high < 0 and side < 0):
        return "reproduced"
    if low > 0 or high < 0:
        return "contradicted"
    if detectable is not None and not math.isnan(detectable) and detectable <= abs(claimed):
        return f"not seen (could have detected ≥ {detectable:.2g})"
    return "inconclusive"


def as_read(low: float, high: float, p_adjusted: float | None = None) -> tuple[float, float]:
    """The interval a verdict reads: [``low``, ``high``], or, in a family whose correction leaves the test's p at 0.05
    or above (``p_adjusted``), stretched to reach 0 — the family's correction read as if the interval included 0.

    >>> as_read(0.001, 0.02, p_adjusted=0.09)
    (0.0, 0.02)
    >>> as_read(0.001, 0.02, p_adjusted=0.01)
    (0.001, 0.02)"""
    if p_adjusted is not None and not p_adjusted < 0.05:
        return min(low, 0.0), max(high, 0.0)
    return low, high


def family_verdicts(claimed, low, high, p, *, detectable=None, untested_because=None) -> list[str]:
    """The words of one family of tests (docs/verdicts.md, "A family of tests": the tests one publication makes of one
    paper's claims): each row's :func:`verdict`, its p Holm-adjusted over the rows tested (a row with a reason in
    ``untested_because`` is no test and is not counted).

    >>> family_verdicts([1, 1, 1], [0.01, 0.001, -0.1], [0.2, 0.3, 0.1], [0.03, 0.001, 0.5])  # 0.03 x 2 >= 0.05
    ['inconclusive', 'reproduced', 'inconclusive']"""
    return holm_family(claimed, low, high, p, detectable=detectable, untested_because=untested_because)[1]


def holm_family(claimed, low, high, p, *, detectable=None, untested_because=None) -> tuple[list[float], list[str]]:
    """:func:`family_verdicts` with the Holm-adjusted p-values it reads them by (NaN for the rows untested)."""
    n = len(claimed)
    detectable = [None] * n if detectable is None else list(detectable)
    reasons = [None] * n if untested_because is None else list(untested_because)  # a Series has no truth value
    why = [w if isinstance(w, str) and w else None for w in reasons]
    adjusted = holm([float("nan") if w else float(q) for q, w in zip(p, why)])
    words = [
        verdict(c, lo, hi, detectable=d, untested_because=w, p_adjusted=None if w else a)
        for c, lo, hi, d, w, a in zip(claimed, low, high, detectable, why, adjusted)
    ]
    return adjusted, words


def word_of(phrase: str) -> str:
    """The vocabulary's word a written verdict starts with; a phrase outside the vocabulary is an error.

    >>> word_of("not seen (could have detected ≥ 0.012)")
    'not seen'"""
    for word in sorted(VERDICTS, key=len, reverse=True):
        if phrase == word or phrase.startswith(word + " ("):
            return word
    raise ValueError(f"{phrase!r} is not a verdict; the words are: {', '.join(VERDICTS)} (docs/verdicts.md)")


def agreement(paper: float, low: float, high: float) -> str:
    """Whether the paper's number lies in our interval, in words to write beside the verdict.

    >>> agreement(-0.8, -0.81, -0.79)
    "the paper's -0.8 inside [-0.81, -0.79]"
    """
    where = "inside" if low <= paper <= high else "outside"
    return f"the paper's {paper:g} {where} [{low:.3g}, {high:.3g}]"
