"""The fine-tuning sweep's tables, from its run records, and the report that writes them with the figures.

Tables: ``finetune`` — per task × model × regulariser × weight, after the last epoch, mean and std over the seeds
that did not diverge (which are counted): the held-out metric (MCC for CoLA, F1 for MRPC, else accuracy) and
accuracy; IsoScore*, IsoScore and mean cosine of the regulariser's points; IsoScore, mean cosine, silhouette, TwoNN,
LID and the activation peak ratio (:func:`isoflow.metrics.peak_ratio`) of the pooled outputs. ``finetune_paired`` —
every weight against the plain run (λ = 0) of the same seed: the mean paired difference of the held-out metric,
IsoScore*, TwoNN, the silhouette and the pooled outputs' IsoScore, with a 95 % t-interval over seeds.

Figures: :mod:`isoflow.finetune.figures`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..records import load_runs
from ..reporting import diverged, lambda_summary, rows_where, write_table
from ..reporting.sweeps import finals
from .figures import (
    activations_figure,
    baselines_figure,
    epochs_figure,
    lambda_unit,
    layers_epochs_figure,
    layers_figure,
    performance_figure,
    silhouette_vs_isoscore_figure,
    strength_control_figure,
    twonn_figure,
)
from .manipulation import CAPTION as MANIPULATION_CAPTION
from .manipulation import manipulation_table
from .settings import CONFIGURATION as KEY

FINAL = (
    "metric",
    "accuracy",
    "isoscore_star",
    "isoscore_points",
    "cosine_points",
    "isoscore",
    "cosine_anisotropy",
    "silhouette",
    "twonn",
    "lid_mle",
    "activation_peak_ratio",
)
# The poster's claims (performance, isotropy, ID, clusters), then the pooled outputs' IsoScore: Mickus et al.'s link
# (lower IsoScore, higher silhouette) is read on the outputs the silhouette is measured on, not on the penalty's points
PAIRED = ("metric", "isoscore_star", "twonn", "silhouette", "isoscore")
# Measured on the regulariser's points: a run is paired with the plain run only where both used the same points (CosReg
# on the last layer's token states against λ = 0's every layer would compare two point sets)
ON_POINTS = ("isoscore_star",)


def _complete(epochs: pd.DataFrame, info: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Records made before CosReg existed hold no ``reg``/``cosreg_weight``: they are I-STAR runs. The activation peak
    ratio is derived from each epoch's per-dimension mean |activation|."""
    for frame in (epochs, info):
        if "reg" not in frame:
            frame["reg"] = "istar"
        if "cosreg_weight" not in frame:
            frame["cosreg_weight"] = 0.0
    if "mean_abs_activation" in epochs and "activation_peak_ratio" not in epochs:
        from ..metrics.outliers import peak_ratio  # here: a report loads torch only for records that lack the ratio

        # a profile is its own one-row point set
        epochs["activation_peak_ratio"] = [peak_ratio(np.asarray(a)[None, :]) for a in epochs["mean_abs_activation"]]
    return epochs, info


def summary(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """One row per task × model × regulariser × weight, with the name of the task's metric."""
    epochs, info = _complete(epochs, info)
    columns = [c for c in FINAL if c in epochs]
    table = lambda_summary(epochs, info, order="epoch", length="epochs", columns=columns, key=KEY)
    last = finals(epochs, info, "epoch", KEY)
    names = []
    for _, row in table.iterrows():
        config = {"reg": row.reg, "istar_lambda": row.istar_lambda, "cosreg_weight": row.cosreg_weight}
        match = rows_where(last, task=row.task, model=row.model, **config)
        names.append(next(iter(match["metric_name"]), ""))
    table.insert(table.columns.get_loc("epochs") + 1, "metric_name", names)
    return table


def paired(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Each weight against the plain run (λ = 0) of the same task, model and seed, after the last epoch: the mean
    paired difference, its std over seeds and a 95 % t-interval (NaN with fewer than 2 seeds). IsoScore* is paired
    only where both runs measured it on the same points (``ON_POINTS``; else NaN)."""
    from scipy.stats import t as student

    epochs, info = _complete(epochs, info)
    last = finals(epochs, info, "epoch", KEY)
    run = [*KEY, "seed"]
    last = last.merge(info[[*run, "points"]], on=run)
    plain = rows_where(last, istar_lambda=0, cosreg_weight=0)
    rows = []
    for (task, model, reg, lam, w), runs in last.groupby(list(KEY), sort=True):
        if lam == 0 and w == 0:
            continue
        base = rows_where(plain, task=task, model=model).set_index("seed")
        both = runs.set_index("seed").join(base[[*PAIRED, "points"]], rsuffix="_plain", how="inner")
        row = {"task": task, "model": model, "reg": reg, "weight": lam if reg == "istar" else w, "seeds": len(both)}
        for col in PAIRED:
            d = both[col] - both[f"{col}_plain"]
            if col in ON_POINTS:
                d = d[both["points"] == both["points_plain"]]
            n = len(d)
            half = float(student.ppf(0.975, n - 1) * d.std() / np.sqrt(n)) if n > 1 else np.nan
            row.update(
                {
                    f"{col}_diff": d.mean(),
                    f"{col}_diff_std": d.std() if n > 1 else np.nan,
                    f"{col}_diff_ci_low": d.mean() - half,
                    f"{col}_diff_ci_high": d.mean() + half,
                }
            )
        rows.append(row)
    columns = ["task", "model", "reg", "weight", "seeds"] + [
        f"{c}_{s}" for c in PAIRED for s in ("diff", "diff_std", "diff_ci_low", "diff_ci_high")
    ]
    return pd.DataFrame(rows, columns=columns)


CAPTION = (
    "Fine-tuning with a regulariser (I-STAR: loss + λ·(1 − IsoScore*); CosReg: loss + w·mean cosine), held-out "
    "measurements after the last epoch (mean and std over seeds; diverged runs counted, not averaged). metric: MCC for "
    "CoLA, F1 for MRPC, accuracy otherwise; *_points: the regulariser's points (token states); the rest: pooled "
    "outputs; "
    "activation_peak_ratio: max over median of the per-dimension mean |activation| (outlier dimensions raise it)."
)
PAIRED_CAPTION = (
    "Paired differences against the plain run (λ = 0) of the same seed, after the last epoch: mean, std over seeds "
    "and a 95 % t-interval, of the metric, IsoScore* (the regulariser's points; empty where they differ from the plain "
    "run's), and TwoNN, the silhouette and IsoScore (pooled outputs). "
    "A positive metric_diff means the regulariser helped on the held-out data."
)


LAYER_METRICS = {
    "layer_isoscore": "IsoScore",
    "layer_s_inter": "S_inter",
    "layer_twonn": "TwoNN",
    # linear CKA to the pretrained model's states of the same tokens: all of them, and those past each sequence's first
    # position (a causal LM's attention sink); runs made before it was measured have neither
    "layer_cka_pretrained": "CKA (pretrained)",
    "layer_cka_pretrained_past_first": "CKA (pretrained), past 1st",
}
CKA_NOTE = (
    " CKA (pretrained): linear CKA between the layer's states of the same tokens under the pretrained model and the "
    "fine-tuned one (1: the same geometry); past 1st: of the tokens past each sequence's first position."
)


def _captioned(caption: str, table: pd.DataFrame) -> str:
    """The caption, with what CKA is where the table has it."""
    return caption + CKA_NOTE if "measure" in table and table["measure"].str.startswith("CKA").any() else caption


def _long_layers(epochs: pd.DataFrame) -> pd.DataFrame:
    """The per-layer measurements (lists per epoch) as one row per run × epoch × layer."""
    rows = []
    cols = [c for c in LAYER_METRICS if c in epochs]
    for _, r in epochs.dropna(subset=cols[:1]).iterrows():
        for layer in range(len(r[cols[0]])):
            rows.append(
                {**{k: r[k] for k in (*KEY, "seed", "epoch")}, "layer": layer, **{c: r[c][layer] for c in cols}}
            )
    return pd.DataFrame(rows)


def layers_table(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Per task × model × regulariser × weight × layer and measurement: its value before training (epoch 0) and after
    the last epoch (means over the seeds that finished), and the change within a seed with a 95 % t-interval over seeds
    — does the classification objective's anisotropy reach the bottom layers? — and, for a regularised run, its value
    after the last epoch minus the plain run's (λ = 0, no CosReg) of the same seed at that layer, with a 95 %
    t-interval and p over seeds (``vs_plain``: did the regulariser change this layer more than training does?)."""
    from ..reporting.significance import seed_interval

    epochs, info = _complete(epochs, info)
    long = _long_layers(epochs)
    last_epoch = finals(epochs, info, "epoch", KEY)[[*KEY, "seed", "epoch"]]
    end = long.merge(last_epoch, on=[*KEY, "seed", "epoch"])
    start = long[long.epoch == 0]
    both = end.merge(start.drop(columns="epoch"), on=[*KEY, "seed", "layer"], suffixes=("", "_before"))
    plain = rows_where(end, istar_lambda=0, cosreg_weight=0).drop(columns=["reg", "istar_lambda", "cosreg_weight"])
    plain = plain.drop(columns="epoch")
    both = both.merge(plain, on=["task", "model", "seed", "layer"], how="left", suffixes=("", "_plain"))
    rows = []
    for (task, model, reg, lam, w, layer), g in both.groupby([*KEY, "layer"], sort=True):
        for col, name in LAYER_METRICS.items():
            if col not in g:
                continue
            change = seed_interval((g[col] - g[f"{col}_before"]).dropna())
            regularised = not (lam == 0 and w == 0)
            vs = seed_interval((g[col] - g[f"{col}_plain"]).dropna() if regularised else [])
            rows.append(
                {
                    "task": task,
                    "model": model,
                    "reg": reg,
                    "weight": lam if reg == "istar" else w,
                    "layer": layer,
                    "measure": name,
                    "seeds": change["seeds"],
                    "before": g[f"{col}_before"].mean(),
                    "after": g[col].mean(),
                    "change": change["mean"],
                    "change_ci_low": change["low"],
                    "change_ci_high": change["high"],
                    "vs_plain_seeds": vs["seeds"],
                    "vs_plain": vs["mean"],
                    "vs_plain_low": vs["low"],
                    "vs_plain_high": vs["high"],
                    "vs_plain_p": vs["p"],
                }
            )
    return pd.DataFrame(rows)


LAYERS_CAPTION = (
    "Per layer of the fine-tuned encoder (0 = embedding layer), on the held-out token states: IsoScore, S_inter "
    "and TwoNN before training (epoch 0) and after the last epoch (means over seeds), and the change within a "
    "seed with a 95 % t-interval over seeds; vs_plain: a regularised run's value after the last epoch minus the plain "
    "run's (lambda = 0) of the same seed, mean over the vs_plain_seeds seeds with a 95 % t-interval and p (the seed "
    "is the unit; empty for the plain run, and with one seed no interval)."
)


def layers_by_epoch(epochs: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Per task × model × regulariser × weight, measurement and epoch (0 = before training), every layer's value (one
    column per layer, the mean over the seeds that did not diverge): whether a change that starts in the top layers
    reaches the bottom ones as training goes on."""
    epochs, info = _complete(epochs, info)
    finished = info.loc[~diverged(info), [*KEY, "seed"]]
    long = _long_layers(epochs.merge(finished, on=[*KEY, "seed"]))
    rows = []
    for (task, model, reg, lam, w, epoch), g in long.groupby([*KEY, "epoch"], sort=True):
        for col, name in LAYER_METRICS.items():
            if col not in g:
                continue
            means = g.groupby("layer")[col].mean()
            rows.append(
                {
                    "task": task,
                    "model": model,
                    "reg": reg,
                    "weight": lam if reg == "istar" else w,
                    "measure": name,
                    "epoch": int(epoch),
                    "seeds": int(g["seed"].nunique()),
                    **{f"layer {layer}": v for layer, v in means.items()},
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    order = {name: i for i, name in enumerate(LAYER_METRICS.values())}
    return table.sort_values(
        ["task", "model", "measure", "reg", "weight", "epoch"], key=lambda c: c.map(order) if c.name == "measure" else c
    ).reset_index(drop=True)


LAYERS_BY_EPOCH_CAPTION = (
    "Per layer of the fine-tuned encoder (layer 0 = embedding layer), on the held-out token states: IsoScore, S_inter "
    "and TwoNN after every epoch (epoch 0: before training), means over the seeds that did not diverge."
)


def lambda_star_note(runs: list[Path]) -> str:
    """A caption's sentence on λ's unit where the runs set λ from the penalty's pull (``istar_pull``; their records'
    ``istar_lambda_from_pull``): λ* as the runs computed it and the pull it stands for; "" where none did."""
    pulled = [json.loads(Path(r).read_text()).get("istar_lambda_from_pull") for r in runs]
    pulled = [p for p in pulled if p]
    if not pulled:
        return ""
    stars = [p["lambda"] for p in pulled]
    pulls = ", ".join(f"{v:g}" for v in sorted({p["istar_pull"] for p in pulled}))
    spread = f"{min(stars):.4f}–{max(stars):.4f} over the {len(stars)} runs" if len(stars) > 1 else "1 run"
    return (
        f" I-STAR's λ (istar_lambda, weight) in units of λ* = {np.mean(stars):.3f} ({spread}, each computed by its run "
        f"on the same training batches): the λ whose penalty's gradient pulls {pulls} times as hard as the task loss's "
        "at the pretrained model (isoflow.finetune.points_diagnosis.lambda_for_pull)."
    )


def report(records, tables_dir: str | os.PathLike, figures_dir: str | os.PathLike) -> list[Path]:
    """``records``: the runs' records, the tasks' baseline records (``bag-of-words.json``) and, where measured, each
    task × model's gradients at the pretrained model (``gradients.json``) and each weight's CKA between its seeds
    (``cka-between-seeds.json``) and its runs' comparisons with their namesakes elsewhere (``same-as-seed<S>.json``)."""
    from .controls import CAPTION as CONTROLS_CAPTION
    from .controls import (
        GRADIENTS_CAPTION,
        MCNEMAR_CAPTION,
        controls_table,
        gradients_table,
        mcnemar_by_seed,
        selected_runs,
        split_inputs,
    )
    from .strength_control import CAPTION as CONTROL_CAPTION
    from .strength_control import PULLS_CAPTION, SEEDS_CAPTION, control_reading, split_control

    records, baselines, gradients, floors, same_as = split_inputs(records)
    written = []
    control, records = split_control(records)
    if control:  # the strength-matched control: its reading, then the rest without it
        readings, seeds, pulls = control_reading(control, records)
        for table, name, caption in (
            (readings, "finetune_strength_control", CONTROL_CAPTION),
            (seeds, "finetune_strength_control_seeds", SEEDS_CAPTION),
            (pulls, "finetune_strength_control_pulls", PULLS_CAPTION),
        ):
            written += write_table(table, Path(tables_dir) / name, caption=caption, floatfmt="%.4f")
    epochs, info = _complete(*load_runs(records))
    unit, note = lambda_unit(info), lambda_star_note(records)  # λ in units of λ*: every caption and figure says so
    table = summary(epochs, info)
    written += write_table(table, Path(tables_dir) / "finetune", caption=CAPTION + note, floatfmt="%.4f")
    runs = selected_runs(records)
    controls = controls_table(runs, baselines)
    written += write_table(
        controls,
        Path(tables_dir) / "finetune_controls",
        caption=CONTROLS_CAPTION + note,
        floatfmt="%.4f",
    )
    written += write_table(
        mcnemar_by_seed(runs),
        Path(tables_dir) / "finetune_mcnemar_seeds",
        caption=MCNEMAR_CAPTION + note,
        floatfmt="%.4f",
    )
    if gradients:
        written += write_table(
            gradients_table(gradients), Path(tables_dir) / "finetune_gradients", caption=GRADIENTS_CAPTION
        )
    # Written even where it is empty (runs made before the check existed): the workflow declares it.
    written += write_table(
        manipulation_table(epochs, info),
        Path(tables_dir) / "finetune_manipulation",
        caption=MANIPULATION_CAPTION + note,
        floatfmt="%.4f",
    )
    if floors:
        from .seed_floor import CAPTION as FLOOR_CAPTION
        from .seed_floor import floor_table

        written += write_table(
            floor_table(floors), Path(tables_dir) / "finetune_seed_floor", caption=FLOOR_CAPTION, floatfmt="%.4f"
        )
    if same_as:
        from .same_as import CAPTION as SAME_AS_CAPTION
        from .same_as import same_as_table

        written += write_table(
            same_as_table(same_as), Path(tables_dir) / "finetune_same_as", caption=SAME_AS_CAPTION, floatfmt="%.3g"
        )
    paired_table = paired(epochs, info)
    written += write_table(
        paired_table, Path(tables_dir) / "finetune_paired", caption=PAIRED_CAPTION + note, floatfmt="%.4f"
    )
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    if control:
        bound = float(readings["bound"].iloc[0])  # the manipulation check's, shaded
        written += strength_control_figure(seeds, bound, figures_dir / "finetune_strength_control")
    istar = table[table.reg == "istar"]
    written += performance_figure(istar, figures_dir / "finetune_performance", unit)
    written += twonn_figure(istar, figures_dir / "finetune_twonn", unit)
    finished = info.loc[~diverged(info), list(KEY) + ["seed"]]
    kept = epochs.merge(finished, on=list(KEY) + ["seed"])
    written += silhouette_vs_isoscore_figure(kept, figures_dir / "finetune_silhouette_vs_isoscore", unit)
    written += baselines_figure(table, controls, figures_dir / "finetune_baselines", unit)
    written += epochs_figure(kept, figures_dir / "finetune_epochs", unit)
    if "mean_abs_activation" in epochs:
        written += activations_figure(finals(epochs, info, "epoch", KEY), figures_dir / "finetune_activations", unit)
    if "layer_isoscore" in epochs and epochs["layer_isoscore"].notna().any():
        per_layer = layers_table(epochs, info)
        caption = _captioned(LAYERS_CAPTION + note, per_layer)
        written += write_table(per_layer, Path(tables_dir) / "finetune_layers", caption=caption, floatfmt="%.4f")
        written += layers_figure(per_layer, figures_dir / "finetune_layers", unit)
        by_epoch = layers_by_epoch(epochs, info)
        written += write_table(
            by_epoch,
            Path(tables_dir) / "finetune_layers_epochs",
            caption=_captioned(LAYERS_BY_EPOCH_CAPTION + note, by_epoch),
            floatfmt="%.4f",
        )
        written += layers_epochs_figure(by_epoch, figures_dir / "finetune_layers_epochs", unit)
    return written
