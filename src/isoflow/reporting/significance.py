"""Paired tests over held-out examples: does a fine-tuning variant classify the *same* sentences differently from the
plain run, beyond chance?

* :func:`mcnemar` — McNemar's exact test on the discordant pairs: b = examples the variant gets right and the plain run
  wrong, c = the reverse; under the null each discordant example is a fair coin, p = min(1, 2·P(Bin(b + c, ½) ≤
  min(b, c))). Seeds are combined by pooling their discordant counts (each seed's run is paired with the plain run of
  the same seed on the same examples).
* :func:`correlation_interval` — an interval for correlations over seeds on r's scale (Fisher's z);
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


# ----- The seed as the unit: a training procedure's effect, over its runs --------------------------------------------
# A claim about a procedure ("λ < 0 improves accuracy") is a claim over what training with different seeds gives;
# pooling the sentences of several seeds treats every sentence of every seed as independent (Dietterich 1998).
# Here each seed contributes one paired difference (the run minus the plain run of the same seed).


def seed_interval(differences, confidence: float = 0.95) -> dict:
    """Paired differences over seeds (one per seed): their mean, std, count, the two-sided t-interval and the
    one-sample t-test's p (NaN with fewer than 2 seeds).

    >>> r = seed_interval([-0.021, -0.023, 0.004])
    >>> round(r["mean"], 4), round(r["low"], 3), round(r["high"], 3), round(r["p"], 2)
    (-0.0133, -0.051, 0.024, 0.26)"""
    from scipy.stats import t as student

    d = np.asarray(differences, dtype=float)
    n = len(d)
    mean = float(d.mean()) if n else float("nan")
    if n < 2:
        nan = float("nan")
        return {"mean": mean, "std": nan, "seeds": n, "low": nan, "high": nan, "p": nan}
    sd = float(d.std(ddof=1))
    half = float(student.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n))
    p = float(2 * student.sf(abs(mean) / (sd / np.sqrt(n)), n - 1)) if sd > 0 else (1.0 if mean == 0 else 0.0)
    return {"mean": mean, "std": sd, "seeds": n, "low": mean - half, "high": mean + half, "p": p}


def summary_p(mean: float, sd: float, n: int) -> float:
    """The one-sample t-test's two-sided p from a table's mean, standard deviation and count (:func:`seed_interval`'s p,
    for a table that kept only those).

    >>> round(summary_p(-0.0133, 0.0150, 3), 2)
    0.26"""
    from scipy.stats import t as student

    if n < 2 or not np.isfinite(sd):
        return float("nan")
    if sd == 0:
        return 1.0 if mean == 0 else 0.0
    return float(2 * student.sf(abs(mean) / (sd / np.sqrt(n)), n - 1))


def correlation_interval(correlations, confidence: float = 0.95) -> dict:
    """Correlations over seeds (one r per seed): a 95 % interval for them on r's own scale, inside [−1, 1] — the
    t-interval of Fisher's z = atanh(r) over the seeds, carried back by tanh (a bounded statistic's t-interval can
    pass ±1; z's spread is near-normal), with the mean of r and the t-test's p on z.

    >>> r = correlation_interval([0.99, 0.97, 0.999, 0.95, 0.98])
    >>> round(r["low"], 4), round(r["high"], 4), r["high"] < 1
    (0.9186, 0.9981, True)"""
    r = np.clip(np.asarray(correlations, dtype=float), -1 + 1e-15, 1 - 1e-15)  # atanh(±1) is infinite
    z = seed_interval(np.arctanh(r), confidence)
    return {
        "mean": float(r.mean()) if len(r) else float("nan"),
        "seeds": z["seeds"],
        "low": float(np.tanh(z["low"])),
        "high": float(np.tanh(z["high"])),
        "p": z["p"],
    }


PAIRED_SUFFIXES = ("diff", "diff_std", "diff_ci_low", "diff_ci_high")  # the columns paired_columns names, in order


def paired_columns(name: str, differences) -> dict:
    """A report table's columns for paired differences (one per seed, or per batch): ``<name>_diff`` (their mean),
    ``<name>_diff_std`` and the 95 % t-interval ``<name>_diff_ci_low``/``_ci_high`` (:func:`seed_interval`).

    >>> {k: round(v, 3) for k, v in paired_columns("acc", [0.01, 0.03]).items()}
    {'acc_diff': 0.02, 'acc_diff_std': 0.014, 'acc_diff_ci_low': -0.107, 'acc_diff_ci_high': 0.147}"""
    r = seed_interval(differences)
    return {f"{name}_{suffix}": r[k] for suffix, k in zip(PAIRED_SUFFIXES, ("mean", "std", "low", "high"))}


def paired_test(row, name: str, n: int) -> dict:
    """What a table's paired columns for ``name`` (:func:`paired_columns`, in ``row``: a dict or a table's row) say as
    a test over ``n`` units: the mean, the interval, the t-test's p (:func:`summary_p`) and the detectable effect.

    >>> t = paired_test(paired_columns("acc", [0.01, 0.03, 0.02]), "acc", 3)
    >>> round(t["mean"], 3), round(t["p"], 3), round(t["detectable"], 3)
    (0.02, 0.074, 0.033)"""
    mean, sd = row[f"{name}_diff"], row[f"{name}_diff_std"]
    low, high = row[f"{name}_diff_ci_low"], row[f"{name}_diff_ci_high"]
    return {"mean": mean, "low": low, "high": high, "p": summary_p(mean, sd, n), "detectable": detectable_effect(sd, n)}


def detectable_effect(sd: float, seeds: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true mean difference a two-sided paired t-test over ``seeds`` seeds at level ``alpha`` detects with
    probability ``power``, when the per-seed differences spread with std ``sd`` (exact: the noncentral t).

    >>> round(detectable_effect(0.0096, 6), 4)
    0.0138"""
    from scipy.optimize import brentq
    from scipy.stats import nct
    from scipy.stats import t as student

    if seeds < 2 or not sd > 0:
        return float("nan")
    df = seeds - 1
    critical = student.ppf(1 - alpha / 2, df)

    def shortfall(effect: float) -> float:
        shift = effect / (sd / np.sqrt(seeds))
        reached = nct.sf(critical, df, shift) + nct.cdf(-critical, df, shift)
        return (1.0 if np.isnan(reached) else reached) - power  # NaN: SciPy's nct far in its tail, where power is 1

    return float(brentq(shortfall, 0.0, (critical + 10) * sd / np.sqrt(seeds)))  # power ≈ 1 at the upper end


def seeds_for(sd: float, effect: float, alpha: float = 0.05, power: float = 0.8, at_most: int = 1000) -> int:
    """The fewest seeds (≥ 2) whose detectable effect (:func:`detectable_effect`) is at most ``effect``.

    >>> seeds_for(0.0096, 0.015), seeds_for(0.0096, 0.01)
    (6, 10)"""
    for n in range(2, at_most + 1):
        if detectable_effect(sd, n, alpha, power) <= effect:
            return n
    raise ValueError(f"more than {at_most} seeds needed to detect {effect} with std {sd}")


# ----- Two arms, each against its own baseline: a difference of seed-level differences ------------------------------
# A control of strength (docs/verdicts.md) compares an intervention's seed-level differences with a control's, each
# taken against its own λ = 0 at its own commit: two samples whose seeds are not paired across them.


def difference_interval(a, b, confidence: float = 0.95) -> dict:
    """mean(a) − mean(b) over two independent samples (one value per seed each), Welch's t-interval and test (the
    Welch–Satterthwaite degrees of freedom; no equal spread assumed): the difference, its standard error, df, the
    interval and the two-sided p (NaN with fewer than 2 values in either).

    >>> r = difference_interval([-0.04, -0.05, -0.03], [0.0, -0.01, 0.01])
    >>> round(r["difference"], 3), round(r["low"], 3), round(r["high"], 3), round(r["p"], 3)
    (-0.04, -0.063, -0.017, 0.008)"""
    from scipy.stats import t as student

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    nan = float("nan")
    if len(x) < 2 or len(y) < 2:
        diff = float(x.mean() - y.mean()) if len(x) and len(y) else nan
        return {"difference": diff, "se": nan, "df": nan, "low": nan, "high": nan, "p": nan, "n": (len(x), len(y))}
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = float(np.sqrt(va + vb))
    df = float((va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))) if se > 0 else float(len(x) + len(y) - 2)
    diff = float(x.mean() - y.mean())
    half = float(student.ppf(0.5 + confidence / 2, df) * se)
    p = float(2 * student.sf(abs(diff) / se, df)) if se > 0 else (1.0 if diff == 0 else 0.0)
    return {
        "difference": diff,
        "se": se,
        "df": df,
        "low": diff - half,
        "high": diff + half,
        "p": p,
        "n": (len(x), len(y)),
    }


def detectable_difference(
    sd_a: float, n_a: int, sd_b: float, n_b: int, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest true difference of two means that Welch's two-sided test at level ``alpha`` detects with
    probability ``power``, for samples of ``n_a`` and ``n_b`` values spreading with std ``sd_a`` and ``sd_b`` (the
    noncentral t at Welch's degrees of freedom of those spreads: an approximation, since the test estimates them; at 6
    and 7 seeds it overstates the power by about 1 point: tests/test_verdicts.py).

    >>> round(detectable_difference(0.0122, 6, 0.0122, 6), 4)
    0.0219"""
    from scipy.optimize import brentq
    from scipy.stats import nct
    from scipy.stats import t as student

    if n_a < 2 or n_b < 2 or not (sd_a > 0 or sd_b > 0):
        return float("nan")
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    critical = student.ppf(1 - alpha / 2, df)

    def shortfall(effect: float) -> float:
        reached = nct.sf(critical, df, effect / se) + nct.cdf(-critical, df, effect / se)
        return (1.0 if np.isnan(reached) else reached) - power

    return float(brentq(shortfall, 0.0, (critical + 10) * se))
