"""The verdict vocabulary (docs/verdicts.md): each word from its rule, and nothing outside it."""

from __future__ import annotations

import numpy as np
import pytest

from isoflow.reporting.significance import detectable_effect, seed_interval
from isoflow.reporting.verdicts import VERDICTS, agreement, verdict, word_of


@pytest.mark.parametrize(
    ("claimed", "low", "high", "detectable", "word"),
    [
        (0.5, 0.01, 0.9, None, "reproduced"),  # the claimed side, 0 excluded
        (-0.5, -0.9, -0.01, None, "reproduced"),
        (0.5, -0.9, -0.01, None, "contradicted"),  # 0 excluded on the other side
        (-0.5, 0.01, 0.9, 0.1, "contradicted"),
        (0.5, -0.1, 0.2, 0.3, "not seen (could have detected ≥ 0.3)"),  # 0 inside, the claimed size detectable
        (0.5, -0.1, 0.2, 0.5, "not seen (could have detected ≥ 0.5)"),  # at the boundary: detectable
        (0.5, -0.1, 0.2, 0.6, "inconclusive"),  # 0 inside, the claimed size below what the test sees
        (0.5, -0.1, 0.2, None, "inconclusive"),
        (0.5, 0.0, 0.2, None, "inconclusive"),  # an interval touching 0 does not exclude it
    ],
)
def test_each_word_follows_its_rule(claimed, low, high, detectable, word):
    assert verdict(claimed, low, high, detectable=detectable) == word
    assert word_of(word) in VERDICTS


def test_a_seed_level_test_gives_its_verdict():
    """From per-seed paired differences, as a fine-tuning claim is judged: the interval and the detectable effect of
    the same seeds."""
    differences = [-0.021, -0.023, 0.004]  # three seeds' accuracy differences from the plain run
    r = seed_interval(differences)
    x = detectable_effect(r["std"], r["seeds"])
    assert verdict(+0.02, r["low"], r["high"], detectable=x) == "inconclusive"  # 3 seeds cannot see +0.02
    assert verdict(+0.2, r["low"], r["high"], detectable=x).startswith("not seen (could have detected ≥ 0.0")


def test_untested_says_why_and_other_words_are_refused():
    assert verdict(1.0, -1.0, 1.0, untested_because="SmolLM2's IsoScore* did not move") == (
        "untested (SmolLM2's IsoScore* did not move)"
    )
    for phrase in ("confirms", "shows", "does not reach", "doubles", "reproduced-ish"):
        with pytest.raises(ValueError, match="is not a verdict; the words are: reproduced, contradicted"):
            word_of(phrase)
    for bad in ((0.0, -1.0, 1.0), (1.0, 1.0, -1.0), (1.0, float("nan"), 1.0)):
        with pytest.raises(ValueError):
            verdict(*bad)
    assert agreement(-0.808, -0.81, -0.79) == "the paper's -0.808 inside [-0.81, -0.79]"
    assert agreement(-0.978, 0.95, 0.99) == "the paper's -0.978 outside [0.95, 0.99]"


def test_the_difference_of_two_arms_is_welchs_and_its_detectable_effect_has_its_power():
    """difference_interval against SciPy's Welch test (p and interval); detectable_difference against a simulation:
    at the effect it returns, Welch's test rejects in about 80 % of 40,000 seeded experiments (78.7 %: the noncentral t
    at the population's Welch df is an approximation, as every power formula for Welch's test is; within 2 points)."""
    import numpy as np
    from scipy.stats import ttest_ind

    from isoflow.reporting.significance import detectable_difference, difference_interval

    rng = np.random.default_rng(0)
    a, b = rng.normal(-0.04, 0.012, 6), rng.normal(0.0, 0.02, 7)
    ours = difference_interval(a, b)
    theirs = ttest_ind(a, b, equal_var=False)
    ci = theirs.confidence_interval(0.95)
    assert ours["p"] == pytest.approx(theirs.pvalue, rel=1e-10)
    assert (ours["low"], ours["high"]) == pytest.approx((ci.low, ci.high), rel=1e-10)
    effect = detectable_difference(0.012, 6, 0.02, 7)
    x = rng.normal(effect, 0.012, (40_000, 6))
    y = rng.normal(0.0, 0.02, (40_000, 7))
    rejected = ttest_ind(x, y, axis=1, equal_var=False).pvalue < 0.05
    assert rejected.mean() == pytest.approx(0.8, abs=0.02)
    assert np.isnan(difference_interval([0.1], [0.0, 0.2])["low"]) and np.isnan(detectable_difference(0.1, 1, 0.1, 6))


def test_a_correlation_interval_is_fishers_and_stays_inside_plus_minus_one():
    """docs/verdicts.md: an interval of a bounded statistic on its own scale. Near r = 1 the t-interval on r passes 1
    (the supersense row once reached 1.0022); on Fisher's z it cannot, and it equals the z-interval carried back."""
    from scipy import stats

    from isoflow.reporting.significance import correlation_interval, seed_interval

    r = np.array([0.9564, 0.9990, 0.9941, 0.9987, 0.9703])
    assert seed_interval(r)["high"] > 1  # the naive interval
    z = np.arctanh(r)
    half = stats.t.ppf(0.975, len(z) - 1) * z.std(ddof=1) / np.sqrt(len(z))
    got = correlation_interval(r)
    assert (got["low"], got["high"]) == pytest.approx((np.tanh(z.mean() - half), np.tanh(z.mean() + half)), abs=1e-12)
    assert -1 < got["low"] < got["high"] < 1
    assert got["p"] == pytest.approx(stats.ttest_1samp(z, 0).pvalue)
    exact = correlation_interval([1.0, 1.0, 0.99])  # r = 1 exactly: finite, not NaN
    assert np.isfinite(exact["low"]) and exact["high"] <= 1


def _publication(kind: str, plain: float = 0.80, bag: float = 0.70):
    """A fine-tuning publication's three tables, written for the test: λ = −1 and +1 against λ = 0 on one task, and a
    bag of words; every seed-level interval and p chosen by hand."""
    import pandas as pd

    controls = pd.DataFrame({
        "task": ["t"] * 4, "model": ["bag-of-words", "m", "m", "m"], "reg": ["tf-idf", "istar", "istar", "istar"],
        "weight": [np.nan, 0.0, -1.0, 1.0], "n_train": [100] * 4, "metric_name": ["accuracy"] * 4,
        "metric": [bag, plain, plain, plain - 0.04], "seeds": [1, 6, 6, 6],
        "diff_selected": [np.nan, np.nan, -0.004, -0.04], "diff_selected_low": [np.nan, np.nan, -0.017, -0.054],
        "diff_selected_high": [np.nan, np.nan, 0.008, -0.027], "p_seeds_selected": [np.nan, np.nan, 0.39, 0.03],
        "detectable_selected": [np.nan, np.nan, 0.018, 0.02],
    })  # fmt: skip
    paired = pd.DataFrame({
        "task": ["t", "t"], "model": ["m", "m"], "reg": ["istar", "istar"], "weight": [-1.0, 1.0], "seeds": [6, 6],
        "twonn_diff": [-5.0, 31.0], "twonn_diff_std": [1.0, 4.0], "twonn_diff_ci_low": [-6.0, 27.0],
        "twonn_diff_ci_high": [-4.0, 35.0], "silhouette_diff": [0.04, -0.15], "silhouette_diff_std": [0.05, 0.04],
        "silhouette_diff_ci_low": [-0.01, -0.19], "silhouette_diff_ci_high": [0.09, -0.11],
        "isoscore_diff": [-0.003, 0.05], "isoscore_diff_ci_low": [-0.007, 0.04], "isoscore_diff_ci_high": [0.001, 0.07],
    })  # fmt: skip
    moved = pd.DataFrame({"task": ["t", "t"], "model": ["m", "m"], "weight": [-1.0, 1.0], "low": [-0.12, 0.19],
                          "high": [-0.09, 0.23]})  # fmt: skip
    return controls, moved, paired, {"m": kind}


def test_a_fine_tuning_publication_is_one_family_with_every_condition_applied_evenly():
    """isoflow.finetune.verdicts.publication_claims (docs/verdicts.md): the accuracy claims, the intrinsic-dimension
    claim and the silhouette link in one Holm family; the kind rule on the poster's claims, not on Mickus et al.'s
    link; the bag-of-words rule on accuracy only; the link untested where the pooled IsoScore did not move."""
    from scipy.stats import t as student

    from isoflow.finetune.verdicts import LINK, TWONN, publication_claims
    from isoflow.reporting.significance import holm

    claims = publication_claims(*_publication("causal language model")).set_index(["claim", "weight"])
    tested = claims.dropna(subset=["p_holm"])
    # the family: the 2 accuracy, 2 TwoNN and 1 silhouette tests (−1's pooled IsoScore did not move), Holm over 5
    assert len(tested) == 5
    p_twonn = [2 * student.sf(abs(m) / (s / np.sqrt(6)), 5) for m, s in ((-5.0, 1.0), (31.0, 4.0))]
    assert tested.loc[(TWONN, -1.0), "p"] == pytest.approx(p_twonn[0])
    assert list(tested.p_holm) == pytest.approx(holm(list(tested.p)))
    # +1's accuracy: p 0.03, one of 5 (its Holm p 0.06): not reproduced, as its interval alone would be
    assert tested.loc[("λ > 0 hurts", 1.0), "p_holm"] == pytest.approx(0.06)
    assert verdict(-np.inf, -0.054, -0.027) == "reproduced"
    assert claims.loc[("λ > 0 hurts", 1.0), "verdict"] == "not seen (could have detected ≥ 0.02)"
    # a direction without a size says what its data exclude, on the interval its word reads: Holm's p left this one's
    # interval stretched to 0, so it excludes the losses past its far end (not nothing, as its own interval would)
    assert claims.loc[("λ > 0 hurts", 1.0), "excludes"] == "losses beyond -0.054"
    assert claims.loc[("λ < 0 improves", -1.0), "excludes"] == "gains above +0.008"
    assert claims.loc[("λ < 0 improves", -1.0), "verdict"] == "not seen (could have detected ≥ 0.018)"
    assert claims.loc[(TWONN, 1.0), "verdict"] == "reproduced"
    assert claims.loc[(LINK, -1.0), "verdict"] == "untested (the pooled outputs' IsoScore did not move)"
    assert claims.loc[(LINK, 1.0), "verdict"] == "reproduced"  # IsoScore rose, the silhouette fell
    # a sentence encoder: the poster's claims untested, the link still judged, on a family of 1
    encoder = publication_claims(*_publication("sentence encoder")).set_index(["claim", "weight"])
    assert encoder.loc[(TWONN, 1.0), "verdict"].startswith("untested (a sentence encoder")
    assert encoder.loc[("λ > 0 hurts", 1.0), "verdict"].startswith("untested (a sentence encoder")
    assert encoder.loc[(LINK, 1.0), "verdict"] == "reproduced"
    assert encoder.dropna(subset=["p_holm"]).index.tolist() == [(LINK, 1.0)]
    # below the bag of words: accuracy untested (both reasons where both hold), geometry still tested
    below = publication_claims(*_publication("causal language model", plain=0.65)).set_index(["claim", "weight"])
    assert below.loc[("λ < 0 improves", -1.0), "verdict"] == (
        "untested (plain fine-tuning scores below a bag of words: accuracy 0.6500 against 0.7000)"
    )
    assert below.loc[(TWONN, 1.0), "verdict"] == "reproduced"
