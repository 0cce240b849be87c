"""Paired tests over held-out examples: does a fine-tuning variant classify the *same* sentences differently from the
plain run, beyond chance?

* :func:`mcnemar` — McNemar's exact test on the discordant pairs: b = examples the variant gets right and the plain run
  wrong, c = the reverse; under the null each discordant example is a fair coin, p = min(1, 2·P(Bin(b + c, ½) ≤
  min(b, c))). Seeds are combined by pooling their discordant counts (each seed's run is paired with the plain run of
  the same seed on the same examples).
* :func:`holm` — Holm's step-down adjustment for the number of comparisons a table makes (every weight against the
  plain run of one task × model).

References: Q. McNemar, *Psychometrika* 12, 1947; S. Holm, *Scand. J. Statist.* 6, 1979; T. G. Dietterich, *Neural
Computation* 10, 1998 (McNemar's test for comparing classifiers).
"""

from __future__ import annotations

import numpy as np


def mcnemar(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts.

    >>> round(mcnemar(3, 9), 4), mcnemar(0, 0), mcnemar(5, 5)
    (0.146, 1.0, 1.0)"""
    n = int(b) + int(c)
    if n == 0:
        return 1.0
    from scipy.stats import binom

    return float(min(1.0, 2.0 * binom.cdf(min(b, c), n, 0.5)))


def discordant(plain_correct, other_correct) -> tuple[int, int]:
    """(b, c) of two 0/1 vectors over the same examples: b = the other right where the plain run is wrong, c = the
    reverse."""
    plain, other = np.asarray(plain_correct, dtype=bool), np.asarray(other_correct, dtype=bool)
    if plain.shape != other.shape:
        raise ValueError(f"paired runs must cover the same examples: {plain.shape} vs {other.shape}")
    return int((other & ~plain).sum()), int((plain & ~other).sum())


def paired_over_seeds(pairs) -> dict:
    """McNemar over the examples with the seeds' discordant counts pooled: ``pairs`` = [(plain_correct,
    other_correct)] per seed. Returns b, c, the examples compared (all seeds), the pooled difference in accuracy and
    p."""
    b = c = n = 0
    for plain, other in pairs:
        db, dc = discordant(plain, other)
        b, c, n = b + db, c + dc, n + len(plain)
    return {
        "b": b,
        "c": c,
        "examples": n,
        "accuracy_difference": (b - c) / n if n else float("nan"),
        "p": mcnemar(b, c),
    }


def holm(pvalues) -> list[float]:
    """Holm-adjusted p-values, in the given order (NaN stays NaN and is not counted).

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]"""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m, running = len(order), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return [float(v) for v in out]
