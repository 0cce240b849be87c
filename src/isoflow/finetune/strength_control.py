"""The strength-matched control's reading (docs/finetune.md, "The strength-matched control"; docs/verdicts.md, "A
control of strength"), as written before its runs.

Each arm is read against its own λ = 0: per seed, the held-out metric at the run's selected epoch (its best validation
epoch) minus the λ = 0 run of the same seed *in the same set of runs* — the intervention's (I-STAR at +λ*, the fair
sweep) and the control's (the mean-direction loss at the matched pull, at its own commit). Then:

* the manipulation check of the control: its IsoScore* against the pretrained Σ_S after the last epoch minus its own
  λ = 0's, seed by seed; it has not moved isotropy only if that interval lies within ± ``bound`` × the
  intervention's own shift (a quarter); otherwise both readings are **untested (the control moved IsoScore*)**;
* (A) *a second loss this strong hurts*: the control's differences (their t-interval over seeds);
* (B) *the harm is isotropy's*: mean of the intervention's differences minus mean of the control's (Welch's interval:
  the two arms' seeds are not paired across commits);
  each read with the vocabulary's words, the claimed size being the intervention's whole harm (its mean difference),
  the two one family: a **reproduced** or **contradicted** needs its Holm-adjusted p below 0.05."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..records import cpu_kind_label
from ..reporting.significance import (
    detectable_difference,
    detectable_effect,
    difference_interval,
    holm,
    seed_interval,
)
from ..reporting.verdicts import verdict
from .controls import _selected
from .manipulation import share_flipped
from .runs import arm_records

BOUND = 0.25  # the control's IsoScore* shift, as a share of the intervention's, within which it has not moved isotropy


def arm_differences(records, reg: str, weight: float) -> pd.DataFrame:
    """Per seed, the run of ``reg`` at ``weight`` minus the λ = 0 run of the same seed among ``records``: the held-out
    metric at each run's selected epoch (``metric``) and after the last (``metric_last``), IsoScore* against the
    pretrained Σ_S after the last epoch (``isoscore_star``), the share of held-out predictions that differ after the
    last epoch (``flipped``; NaN without recorded predictions), and the kind of CPU the pair was made on (``cpu``: one
    kind, or both where they differ; "not recorded" for records older than the machine's name)."""
    rows = []
    for record in map(Path, records):
        row = _selected(record)
        epochs = pd.read_parquet(record.with_suffix(".parquet"))
        cpu = cpu_kind_label(json.loads(record.read_text()).get("machine"))
        last = epochs.iloc[-1]
        predictions = last["predictions"] if "predictions" in epochs else []
        rows.append({**row, "isoscore_star": float(last["isoscore_star_pretrained"]), "last": predictions, "cpu": cpu})
    runs = pd.DataFrame(rows)
    arm = runs[(runs.reg == reg) & (runs.weight == weight)].set_index("seed")
    plain = runs[(runs.reg == "istar") & (runs.weight == 0.0)].set_index("seed")
    both = arm.merge(plain, left_index=True, right_index=True, suffixes=("", "_plain"))
    if both.empty:
        raise ValueError(f"no seed has both a {reg} {weight:g} run and a plain run among the {len(runs)} records given")
    return pd.DataFrame(
        {
            "metric": both["metric"] - both["metric_plain"],
            "metric_last": both["metric_last"] - both["metric_last_plain"],
            "isoscore_star": both["isoscore_star"] - both["isoscore_star_plain"],
            "flipped": [share_flipped(a, b) for a, b in zip(both["last"], both["last_plain"])],
            "cpu": [a if a == b else f"{a} / {b}" for a, b in zip(both["cpu"], both["cpu_plain"])],
        },
        index=both.index,
    ).sort_index()


def strength_control(intervention: pd.DataFrame, control: pd.DataFrame, bound: float = BOUND) -> pd.DataFrame:
    """The readings (module docstring) from the two arms' per-seed differences (:func:`arm_differences`): one row for
    the manipulation check, one per claim, with the interval, p, Holm's p, the detectable effect and the word."""
    shift = seed_interval(control["isoscore_star"])
    allowed = bound * abs(float(intervention["isoscore_star"].mean()))
    moved = not (-allowed <= shift["low"] and shift["high"] <= allowed)
    harm = float(intervention["metric"].mean())  # the claimed size: the intervention's whole harm
    a = seed_interval(control["metric"])
    a_detectable = detectable_effect(a["std"], a["seeds"])
    b = difference_interval(intervention["metric"], control["metric"])
    sd_i, sd_c = float(intervention["metric"].std(ddof=1)), float(control["metric"].std(ddof=1))
    b_detectable = detectable_difference(sd_i, len(intervention), sd_c, len(control))
    adjusted = holm([a["p"], b["p"]])
    rows = [
        {
            "reading": "the control did not move isotropy",
            "mean": shift["mean"],
            "low": shift["low"],
            "high": shift["high"],
            "bound": allowed,
            "verdict": "moved" if moved else "within the bound",
        }
    ]
    why = "the control moved IsoScore*" if moved else None
    for name, r, mean, detectable, p_holm in (
        ("(A) a second loss this strong hurts", a, a["mean"], a_detectable, adjusted[0]),
        ("(B) the harm is isotropy's", b, b["difference"], b_detectable, adjusted[1]),
    ):
        word = verdict(harm, r["low"], r["high"], detectable=detectable, untested_because=why, p_adjusted=p_holm)
        rows.append(
            {
                "reading": name,
                "mean": mean,
                "low": r["low"],
                "high": r["high"],
                "p": r["p"],
                "p_holm": p_holm,
                "detectable": detectable,
                "claimed": harm,
                "verdict": word,
            }
        )
    return pd.DataFrame(rows)


CAPTION = (
    'The strength-matched control (docs/finetune.md, "The strength-matched control"; the rule: docs/verdicts.md, '
    "\"A control of strength\"): each arm's held-out metric at its runs' best validation epoch minus its own λ = 0 "
    "run of the same seed — the intervention's (I-STAR at +λ*, the published fair sweep the control's runs matched "
    "their pull to) and the control's (the mean-direction loss, its own commit); mean and 95 % interval over seeds "
    "(B: Welch's, the arms' seeds not paired across commits), p and Holm's p over the two claims, the smallest effect "
    "the seeds could detect, the size claimed (the intervention's whole harm) and the verdict. The first row is the "
    "manipulation check: the control's IsoScore* shift against the pretrained Σ_S, within ± a quarter of the "
    "intervention's or not."
)
SEEDS_CAPTION = (
    "The strength-matched control seed by seed: each arm's run minus its own λ = 0 run of the same seed, the held-out "
    "metric at the selected epoch and IsoScore* against the pretrained Σ_S after the last epoch (what the table "
    "finetune_strength_control reads), beside them (not read for a verdict) the metric after the last epoch and the "
    "share of held-out predictions the run flipped against its λ = 0 after the last epoch, and the kind of CPU the "
    'pair was made on (one within each seed: docs/finetune.md, "The strength-matched control").'
)
PULLS_CAPTION = (
    "The strength-matched control's pull (‖∇ loss‖ / ‖∇ task loss‖ on 5 fixed training batches, the run's own head), "
    "seed by seed and epoch by epoch: the pull both arms started the epoch at (the intervention's recorded pull at "
    "that model; the control's weight, in the column beside, set to give it), and each arm's pull at the epoch's end "
    "(the intervention's I-STAR at +λ* with its Σ_S estimated again there; the control's at the weight it trained "
    "with). Matched at each epoch's start by construction; within an epoch each drifts as training moves."
)


def split_control(records) -> tuple[list, list]:
    """(the mean-direction control's run records, the others) among ``records``, each read once."""
    control = [r for r in records if json.loads(Path(r).read_text())["settings"].get("reg") == "meandir"]
    return control, [r for r in records if r not in control]


def matched_arm(control_records) -> Path:
    """The intervention's arm folder the control's runs matched their pull to (each record's ``matched_pull.from``):
    one for all of them, else a ValueError naming the records."""
    found = {json.loads(Path(r).read_text()).get("matched_pull", {}).get("from") for r in control_records}
    if len(found) != 1 or None in found:
        raise ValueError(
            f"{', '.join(map(str, control_records))}: the control's runs must each name one and the same matched run "
            f"folder (matched_pull.from); found {sorted(map(str, found))}"
        )
    return Path(found.pop())


def matched_pulls(control, intervention) -> pd.DataFrame:
    """How the two arms' pulls went, per seed and epoch trained (1, 2, …): the pull both started the epoch at
    (``start``: the intervention's recorded pull at the model the epoch started from, the control's weight set to give
    it — ``control_weight``), and each arm's pull at the epoch's end (``intervention_end`` as the intervention's record
    has it, its Σ_S estimated again there; ``control_end`` at the weight the control trained with). Read from the
    control's run records (``control``) and the intervention's (``intervention``), matched by seed."""
    seed_of = lambda record: int(json.loads(record.read_text())["settings"]["seed"])  # noqa: E731
    ends = {seed_of(r): pd.read_parquet(r.with_suffix(".parquet"))["pull"].tolist() for r in map(Path, intervention)}
    rows = []
    for record in map(Path, control):
        seed = seed_of(record)
        epochs = pd.read_parquet(record.with_suffix(".parquet")).set_index("epoch")
        for epoch in epochs.index[1:]:
            rows.append(
                {
                    "seed": seed,
                    "epoch": int(epoch),
                    "start": float(epochs.loc[epoch - 1, "pull_target"]),
                    "control_weight": float(epochs.loc[epoch - 1, "next_reg_weight"]),
                    "intervention_end": ends[seed][epoch] if seed in ends else float("nan"),
                    "control_end": float(epochs.loc[epoch, "pull"]),
                }
            )
    return pd.DataFrame(rows).sort_values(["seed", "epoch"], ignore_index=True)


def control_reading(control, others) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(the readings, the per-seed differences, the pulls: :func:`matched_pulls`) of the control's runs (``control``;
    their own λ = 0 runs among ``others``: :func:`split_control`) against the intervention's arm they matched and that
    arm's λ = 0 runs, beside it in its sweep (``istar0``)."""
    arm = matched_arm(control)
    intervention_runs = arm_records(arm) + arm_records(arm.parent / "istar0")
    weight = _selected(Path(intervention_runs[0]))["weight"]
    intervention = arm_differences(intervention_runs, "istar", weight)
    control_weight = _selected(Path(control[0]))["weight"]
    mine = arm_differences([*control, *others], "meandir", control_weight)
    seeds = pd.concat(
        [
            intervention.assign(arm=f"I-STAR at {weight:g} ({arm})"),
            mine.assign(arm=f"mean-direction control at {control_weight:g}"),
        ]
    ).reset_index(names="seed")
    columns = ["arm", "seed", "metric", "metric_last", "isoscore_star", "flipped", "cpu"]
    return strength_control(intervention, mine), seeds[columns], matched_pulls(control, arm_records(arm))
