"""The I-STAR poster's accuracy claims read on a fine-tuning publication, every condition of docs/verdicts.md applied
the same way to every row: "λ < 0 improves" at each λ < 0, "λ > 0 hurts" at each λ > 0, each against the plain run
(λ = 0) of the same seed at one epoch.

A row is **untested**, with every reason that holds, where the model is not of the kinds the paper fine-tuned
(:data:`PAPER_KINDS`: language models; a sentence encoder or static vectors are other claims' objects), plain
fine-tuning does not beat a bag of words trained on the same phrases (the model has not learned the task past its
words, so what a penalty does to its accuracy says nothing of the claim), or the penalty did not move IsoScore\\* the
way λ asks (the manipulation check). The rows tested are one family (Holm over their seed-level p-values, all tasks
and models of the publication), and a **reproduced** or **contradicted** needs its Holm-adjusted p below 0.05
(:func:`isoflow.reporting.verdicts.verdict`). A direction without a size is read with what the data exclude: past the
end, on the claimed side, of the interval its word reads (``excludes``; stretched to 0 where Holm's p is 0.05 or more:
:func:`isoflow.reporting.verdicts.as_read`).

>>> controls = pd.DataFrame({
...     "task": ["t"] * 4, "model": ["bag-of-words", "m", "m", "m"], "reg": ["tf-idf", "istar", "istar", "istar"],
...     "weight": [np.nan, 0.0, -1.0, 1.0], "n_train": [100] * 4, "metric_name": ["accuracy"] * 4,
...     "metric": [0.70, 0.80, 0.80, 0.76], "seeds": [1, 6, 6, 6], "diff_selected": [np.nan, np.nan, -0.004, -0.04],
...     "diff_selected_low": [np.nan, np.nan, -0.017, -0.054], "diff_selected_high": [np.nan, np.nan, 0.008, -0.027],
...     "p_seeds_selected": [np.nan, np.nan, 0.39, 0.0005], "detectable_selected": [np.nan, np.nan, 0.018, 0.02]})
>>> moved = pd.DataFrame({"task": ["t", "t"], "model": ["m", "m"], "reg": ["istar", "istar"], "weight": [-1.0, 1.0],
...                       "low": [-0.12, 0.19], "high": [-0.09, 0.23]})
>>> claims = accuracy_claims(controls, moved, {"m": "causal language model"})
>>> claims[["weight", "verdict", "excludes"]].to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
[{'weight': -1.0, 'verdict': 'not seen (could have detected ≥ 0.018)', 'excludes': 'gains above +0.008'},
 {'weight': 1.0, 'verdict': 'reproduced', 'excludes': ''}]
>>> accuracy_claims(controls, moved, {"m": "sentence encoder"}).verdict.iloc[0]
'untested (a sentence encoder, not of the kinds the paper fine-tuned)'
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..models.kinds import CAUSAL_LM, MASKED_LM
from ..reporting.significance import paired_test
from ..reporting.verdicts import as_read, holm_family, word_of
from .runs import BASELINE

PAPER_KINDS = (MASKED_LM, CAUSAL_LM)  # Rudman & Eickhoff fine-tune BERT, ALBERT, DistilBERT: masked LMs
CLAIMS = {-1: "λ < 0 improves", +1: "λ > 0 hurts"}
TWONN = "I-STAR alters intrinsic dimension"  # the poster's Fig. 7: λ < 0 lowers TwoNN, λ > 0 raises it
LINK = "lower IsoScore, higher silhouette"  # Mickus et al.'s, on the pooled outputs
_METRIC_NAMES = {"f1": "F1", "accuracy": "accuracy"}
COLUMNS = [
    "task", "model", "reg", "weight", "claim", "seeds", "mean", "low", "high", "p", "p_holm", "detectable", "excludes",
    "verdict",
]  # fmt: skip


def outside_kind(kind: str) -> str | None:
    """Why a model of ``kind`` is no test of the poster's claims, or None where it is one."""
    return None if kind in PAPER_KINDS else f"a {kind}, not of the kinds the paper fine-tuned"


def below_baseline(metric_name: str, plain: float, baseline: float) -> str | None:
    """Why plain fine-tuning at ``plain`` is no test against a bag of words at ``baseline`` on the same phrases."""
    if plain > baseline:
        return None
    name = _METRIC_NAMES.get(metric_name, metric_name)
    return f"plain fine-tuning scores below a bag of words: {name} {plain:.4f} against {baseline:.4f}"


def excludes(claimed: float, low: float, high: float) -> str:
    """What a direction claimed without a size leaves out where its interval reaches 0: the effects past the interval's
    end on the claimed side ("gains above +0.008"); empty where the interval excludes 0."""
    if low > 0 or high < 0:
        return ""
    return f"gains above {high:+.3f}" if claimed > 0 else f"losses beyond {low:+.3f}"


def accuracy_claims(
    controls: pd.DataFrame, manipulation: pd.DataFrame, kinds: dict[str, str], *, epoch: str = "selected"
) -> pd.DataFrame:
    """The accuracy claims alone (:func:`publication_claims` without the geometry's tests in the family)."""
    return _words(_accuracy_rows(controls, _by_run(manipulation), kinds, epoch))


def publication_claims(
    controls: pd.DataFrame,
    manipulation: pd.DataFrame,
    paired: pd.DataFrame,
    kinds: dict[str, str],
    *,
    epoch: str = "selected",
) -> pd.DataFrame:
    """Every verdict a fine-tuning publication gives, one family (docs/verdicts.md, "A family of tests"): the poster's
    accuracy claims at ``epoch`` from ``controls`` (:data:`CLAIMS`), its intrinsic-dimension claim (:data:`TWONN`: λ < 0
    lowers the held-out pooled TwoNN, λ > 0 raises it; a claim about the models it fine-tunes, with the manipulation
    check) and Mickus et al.'s link (:data:`LINK`: where λ or CosReg moved the pooled outputs' IsoScore, the silhouette
    moves the other way; every kind of model) after the last epoch from ``paired`` (a ``finetune_paired`` table), Holm
    over every row tested. ``manipulation`` and ``kinds`` as for the accuracy claims."""
    moved = _by_run(manipulation)
    return _words(pd.concat([_accuracy_rows(controls, moved, kinds, epoch), _geometry_rows(paired, moved, kinds)]))


def _by_run(manipulation: pd.DataFrame) -> pd.DataFrame:
    """The manipulation check's intervals indexed by task × model × weight, as every row looks them up."""
    return manipulation.set_index(["task", "model", "weight"])


def _accuracy_rows(controls, moved, kinds, epoch) -> pd.DataFrame:
    """The accuracy claims' rows (the claim, interval, p, detectable effect, reasons untested), before the family."""
    rows = []
    for r in controls[(controls.reg == "istar") & (controls.weight != 0)].itertuples():
        sign = int(np.sign(r.weight))
        plain = controls[(controls.task == r.task) & (controls.model == r.model) & (controls.reg == "istar")]
        plain = plain[plain.weight == 0].metric.iloc[0]
        bag = controls[(controls.task == r.task) & (controls.model == BASELINE) & (controls.n_train == r.n_train)]
        reasons = (
            outside_kind(kinds[r.model]),
            below_baseline(r.metric_name, plain, bag.metric.iloc[0]),
            _not_moved(moved, r.task, r.model, r.weight),
        )
        why = "; ".join(reason for reason in reasons if reason) or None
        low, high = getattr(r, f"diff_{epoch}_low"), getattr(r, f"diff_{epoch}_high")
        rows.append(
            {
                "task": r.task,
                "model": r.model,
                "reg": r.reg,
                "weight": r.weight,
                "claim": CLAIMS[sign],
                "seeds": r.seeds,
                "mean": getattr(r, f"diff_{epoch}"),
                "low": low,
                "high": high,
                "p": getattr(r, f"p_seeds_{epoch}"),
                "detectable": getattr(r, f"detectable_{epoch}"),
                "untested_because": why,
                "claimed": -sign * math.inf,  # a direction alone: the poster gives no size
            }
        )
    return pd.DataFrame(rows)


def _not_moved(moved: pd.DataFrame, task, model, weight) -> str | None:
    """The manipulation check's reason, or None where the penalty moved IsoScore* the way its weight asks."""
    check = moved.loc[(task, model, weight)]
    return None if (check.high < 0 if weight < 0 else check.low > 0) else "the penalty did not move IsoScore*"


def _geometry_rows(paired: pd.DataFrame, moved: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """The intrinsic-dimension claim's rows (I-STAR's weights) and the link's (every regulariser), before the family."""
    rows = []
    for r in paired[(paired.weight != 0) | (paired.reg != "istar")].itertuples():
        n = int(r.seeds)
        if r.reg == "istar":
            reasons = (outside_kind(kinds[r.model]), _not_moved(moved, r.task, r.model, r.weight))
            why = "; ".join(w for w in reasons if w)
            rows.append(_paired_row(r, TWONN, "twonn", math.copysign(math.inf, r.weight), why or None, n))
        isoscore_moved = r.isoscore_diff_ci_low > 0 or r.isoscore_diff_ci_high < 0
        why = None if isoscore_moved else "the pooled outputs' IsoScore did not move"
        rows.append(_paired_row(r, LINK, "silhouette", -math.copysign(math.inf, r.isoscore_diff), why, n))
    return pd.DataFrame(rows)


def _paired_row(r, claim: str, effect: str, claimed: float, why: str | None, n: int) -> dict:
    test = paired_test(r._asdict(), effect, n)
    return {
        "task": r.task,
        "model": r.model,
        "reg": r.reg,
        "weight": r.weight,
        "claim": claim,
        "seeds": n,
        **{k: test[k] for k in ("mean", "low", "high", "p", "detectable")},
        "untested_because": why,
        "claimed": claimed,
    }


def _words(table: pd.DataFrame) -> pd.DataFrame:
    """The family's Holm-adjusted p and each row's word (:func:`isoflow.reporting.verdicts.holm_family`)."""
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    t = table.reset_index(drop=True)
    t["p_holm"], t["verdict"] = holm_family(t.claimed, t.low, t.high, t.p, detectable=t.detectable,
                                            untested_because=t.untested_because)  # fmt: skip
    # what an accuracy claim's data exclude, read on the interval its word reads (stretched to 0 where Holm's p is not
    # below 0.05, so that a row the family leaves "not seen" still says what it rules out)
    tested = t.claim.isin(list(CLAIMS.values())) & t.untested_because.isna()
    t["excludes"] = [
        excludes(c, *as_read(lo, hi, a)) if test else ""
        for c, lo, hi, a, test in zip(t.claimed, t.low, t.high, t.p_holm, tested)
    ]
    return t[COLUMNS]


def manipulation_intervals(manipulation: pd.DataFrame, paired: pd.DataFrame) -> pd.DataFrame:
    """Per task × model × weight, the seed-level interval of the penalty's IsoScore\\* minus the plain run's after the
    last epoch: from the ``finetune_manipulation`` table (against the pretrained model's Σ_S: one reference for every
    run) where it has the row, else from ``finetune_paired`` (each run's own Σ_S; publications whose records predate
    the first)."""
    keys = ["task", "model", "weight"]
    pretrained = manipulation.rename(columns={"vs_plain_low": "low", "vs_plain_high": "high"})[[*keys, "low", "high"]]
    own = paired.rename(columns={"isoscore_star_diff_ci_low": "low", "isoscore_star_diff_ci_high": "high"})
    own = own[own.reg == "istar"][[*keys, "low", "high"]]
    missing = own.merge(pretrained[keys], on=keys, how="left", indicator=True)
    return pd.concat([pretrained, own[(missing._merge == "left_only").to_numpy()]], ignore_index=True)


# What λ names: two publications' runs at the same weight test one penalty only where these settings agree (the points
# the penalty reads, λ scaled by the penalty's pull, its shrinkage ζ); every other setting is the run's strength or
# set-up, and two runs of one penalty test the same claim however long they trained.
TREATMENT = ("points", "istar_pull", "zeta")
CLAIM_KEY = ["task", "model", "reg", "weight", "claim", "treatment"]


def leading(tests: pd.DataFrame) -> pd.DataFrame:
    """Which run a headline quotes (docs/verdicts.md, "A family of tests"): among the publications that test one claim
    with one penalty (:data:`CLAIM_KEY`), the one that tests it best — the longest-trained (``epochs``), then the most
    powerful (the smallest ``detectable`` effect) — and every publication whose word differs from that one's, since
    runs of one claim that disagree are quoted together.

    ``tests``: one row a publication and claim — :data:`CLAIM_KEY`, ``publication``, ``epochs``, ``detectable`` and
    ``verdict``. Returns per claim the leading publication (``lead``), its word, and ``quote``: the publications a
    headline on that claim must quote (the lead first).

    >>> tests = pd.DataFrame({"publication": ["short", "long", "other"], "task": "t", "model": "m", "reg": "istar",
    ...     "weight": -1.0, "claim": "λ < 0 improves", "treatment": ["a", "a", "b"], "epochs": [2, 4, 3],
    ...     "detectable": [0.01, 0.02, 0.01], "verdict": ["not seen (could have detected ≥ 0.01)", "reproduced",
    ...     "inconclusive"]})
    >>> leading(tests)[["treatment", "lead", "quote"]].to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'treatment': 'a', 'lead': 'long', 'quote': ['long', 'short']},
     {'treatment': 'b', 'lead': 'other', 'quote': ['other']}]
    """
    rows = []
    ranked = tests.assign(word=tests.verdict.map(word_of), power=-tests.detectable)
    for key, runs in ranked.groupby(CLAIM_KEY, sort=True, dropna=False):
        runs = runs.sort_values(["epochs", "power", "publication"], ascending=[False, False, True])
        lead = runs.iloc[0]
        disagree = runs[runs.word != lead.word].publication.tolist()
        rows.append({**dict(zip(CLAIM_KEY, key)), "lead": lead.publication, "word": lead.word,
                     "quote": [lead.publication, *disagree]})  # fmt: skip
    return pd.DataFrame(rows)
