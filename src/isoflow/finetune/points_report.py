"""The points diagnosis as a table and a figure (docs/results/istar-points): from ``points_diagnosis.json``
(:mod:`isoflow.finetune.points_diagnosis`), nothing recomputed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .points_diagnosis import BERT_ISOSCORE, FLOOR, MAX_LAMBDA, REFERENCE_PULL, RULE

# the figure's two panels: the column each draws and its title
PANELS = {"isoscore_star": "IsoScore* of the penalty's points", "pull": "pull: ‖∇ penalty‖ / ‖∇ task‖ at λ = 1"}
COLUMNS = ["isoscore_star", "dimensions", "top_share", "task_grad_norm", "penalty_grad_norm", "pull"]


def diagnosis_frame(result: dict) -> pd.DataFrame:
    """One row per model × recipe, with λ* = the |λ| at which the pull equals MiniLM's at λ = 1, and the rule's pick."""
    rows = []
    for model, m in result["models"].items():
        for recipe, values in m["recipes"].items():
            pull = values["pull"]
            rows.append(
                {
                    "model": model,
                    "dim": m["dim"],
                    "recipe": recipe,
                    **{c: values[c] for c in COLUMNS},
                    "lambda_for_reference_pull": REFERENCE_PULL / pull if pull > 0 else float("inf"),
                    "chosen": recipe == m["chosen"],
                }
            )
    return pd.DataFrame(rows)


def write_report(folder: str | Path) -> list[Path]:
    """``tables/points_diagnosis.*`` and ``figures/points_diagnosis.*`` from ``folder/points_diagnosis.json``."""
    from ..reporting.figures import legend_below, model_colour, panels, save, suptitle
    from ..reporting.tables import write_table

    folder = Path(folder)
    result = json.loads((folder / "points_diagnosis.json").read_text())
    df = diagnosis_frame(result)
    caption = (
        f"The I-STAR penalty's points at the pretrained model, per model and recipe ({result['task']}, medians over "
        f"{result['batches_of_32']} batches of 32 training sentences, zeta = {result['zeta']}, Sigma_S from the same "
        "batches' points): IsoScore* of a batch's points, the dimensions it implies (IsoScore* (d - 1) + 1), the top "
        "principal direction's share of their variance, the gradient norms of the task loss and of 1 - IsoScore* "
        "w.r.t. the encoder's weights, their ratio (pull, at lambda = 1), and lambda_for_reference_pull = "
        f"{REFERENCE_PULL} / pull. {RULE}"
    )
    paths = write_table(df, folder / "tables" / "points_diagnosis", caption=caption, floatfmt="%.4g")

    recipes = list(dict.fromkeys(df["recipe"]))
    models = list(dict.fromkeys(df["model"]))
    fig, axes = panels(2, width=5.2, height=3.6)
    width = 0.8 / len(models)
    for ax, (column, title) in zip(axes, PANELS.items()):
        for i, model in enumerate(models):
            sub = df[df["model"] == model].set_index("recipe").reindex(recipes)
            x = [j + (i - (len(models) - 1) / 2) * width for j in range(len(recipes))]
            ax.bar(x, sub[column], width, color=model_colour(model), label=model)
            for xi, value, chosen in zip(x, sub[column], sub["chosen"]):
                if chosen:  # the recipe the rule picks for this model
                    ax.plot(xi, value * 1.8, marker="*", color="black", ms=8, ls="")
        ax.set_yscale("log")
        low, high = df[column][df[column] > 0].min(), df[column].max()
        ax.set_ylim(low / 3, high * 6)  # room below the smallest bar and above the marks
        ax.set_xticks(range(len(recipes)))
        ax.set_xticklabels([r.replace("tokens-all-layers", "all layers").replace("-", " ") for r in recipes],
                           rotation=35, ha="right", fontsize=7)  # fmt: skip
        ax.set_title(title, fontsize=9)
    axes[0].axhspan(*BERT_ISOSCORE, color="0.85", zorder=0)
    axes[0].axhline(FLOOR, color="0.3", ls=":", lw=1)
    axes[1].axhline(REFERENCE_PULL, color="0.3", ls="--", lw=1)
    axes[1].axhline(REFERENCE_PULL / MAX_LAMBDA, color="0.3", ls="-.", lw=1)
    legend_below(fig, legend_handles(models))
    suptitle(fig, f"The penalty's points at the pretrained model ({result['task']})")
    paths += save(fig, folder / "figures" / "points_diagnosis")
    return paths


def legend_handles(models: list[str]) -> list:
    """The figure's key: a colour per model, the IsoScore paper's BERT band, the floor, the reference pull and the
    pull reachable within the rule's |λ|, the rule's pick."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ..reporting.figures import model_colour

    return [Patch(color=model_colour(m), label=m) for m in models] + [
        Patch(color="0.85", label=f"BERT per layer, {BERT_ISOSCORE[0]}-{BERT_ISOSCORE[1]} (IsoScore paper)"),
        Line2D([], [], color="0.3", ls=":", label=f"IsoScore* floor {FLOOR}"),
        Line2D([], [], color="0.3", ls="--", label=f"MiniLM's pull at λ = 1 ({REFERENCE_PULL})"),
        Line2D([], [], color="0.3", ls="-.", label=f"reachable with |λ| ≤ {MAX_LAMBDA:g}"),
        Line2D([], [], color="black", marker="*", ls="", label="the rule's pick"),
    ]
