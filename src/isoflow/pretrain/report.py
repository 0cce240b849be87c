"""The pretrained models side by side: their held-out scores beside the unigram baseline (a table), and their training
curves (a figure), read from the model folders' ``pretrain.json`` and ``curve.csv``.

Perplexities of the two objectives are not comparable with each other (different tokenizers, and a masked model sees
both sides of the token it predicts); each is comparable with its own unigram baseline, which uses the same tokens
and the same targets."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..reporting.figures import model_colour, panels, save, suptitle
from ..reporting.tables import write_table


def read_models(folders: Sequence[str | os.PathLike]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per model: settings, sizes, held-out and unigram scores; the curves of every model, long format)."""
    rows, curves = [], []
    for folder in map(Path, folders):
        record_path = folder / "pretrain.json"
        if not record_path.is_file():
            raise FileNotFoundError(f"{folder}: no pretrain.json; is it a model folder written by `isoflow pretrain`?")
        record = json.loads(record_path.read_text())
        name = folder.name
        s = record["settings"]
        rows.append(
            {
                "model": name,
                "objective": record["objective"],
                "architecture": record["architecture"],
                "parameters": record["parameters"],
                "layers": s["layers"],
                "hidden": s["hidden"],
                "vocabulary": record["tokenizer"]["vocabulary"],
                "train_tokens": record["train_tokens"],
                "steps": s["steps"],
                "epochs": record["epochs"],
                "heldout_loss": record["heldout"]["loss"],
                "heldout_perplexity": record["heldout"]["perplexity"],
                "heldout_accuracy": record["heldout"]["accuracy"],
                "unigram_loss": record["unigram_baseline"]["loss"],
                "unigram_perplexity": record["unigram_baseline"]["perplexity"],
                "unigram_accuracy": record["unigram_baseline"]["accuracy"],
                "heldout_targets": record["heldout_targets"],
                "hours": record["seconds"] / 3600,
                "seed": s["seed"],
            }
        )
        curve = pd.read_csv(folder / "curve.csv")
        curve.insert(0, "model", name)
        curves.append(curve)
    return pd.DataFrame(rows), pd.concat(curves, ignore_index=True)


def curves_figure(table: pd.DataFrame, curves: pd.DataFrame, stem: Path) -> list[Path]:
    """Left: training loss (line) and held-out loss (dots) per model, the unigram baseline dashed; right: held-out
    accuracy of the predicted token, the baseline's dashed. One colour per model."""
    fig, (loss_ax, acc_ax) = panels(2, width=5.0, height=3.6)
    for _, row in table.iterrows():
        c, m = model_colour(row.model), curves[curves.model == row.model]
        train = m.dropna(subset=["train_loss"])
        held = m.dropna(subset=["heldout_loss"])
        what = f"{row.model} ({row.objective})"
        loss_ax.plot(train.step, train.train_loss, color=c, lw=1.0, alpha=0.8, label=f"{what}: training")
        loss_ax.plot(held.step, held.heldout_loss, "o", color=c, ms=3.5, label=f"{what}: held-out")
        loss_ax.axhline(row.unigram_loss, color=c, ls="--", lw=0.9, label=f"{what}: unigram baseline")
        acc_ax.plot(held.step, held.heldout_accuracy, "o-", color=c, ms=3.5, lw=1.0, label=f"{what}: held-out")
        acc_ax.axhline(row.unigram_accuracy, color=c, ls="--", lw=0.9, label=f"{what}: most frequent token")
    loss_ax.set(xlabel="step", ylabel="cross-entropy (nats per predicted token)", title="Loss")
    acc_ax.set(xlabel="step", ylabel="accuracy of the most likely token", title="Held-out accuracy", ylim=(0, None))
    for ax in (loss_ax, acc_ax):
        ax.grid(alpha=0.3)
        # below the panel: inside, it would cover the baselines' dashed lines
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    suptitle(
        fig,
        "Pretraining: masked (targets: the 15 % masked tokens) and causal (targets: every next token) LMs, "
        "same corpus and size; dashed: the unigram baseline on the same targets",
    )
    return save(fig, stem)


RECORD_FILES = ("pretrain.json", "curve.csv", "config.json", "tokenizer.json", "tokenizer_config.json")


def copy_records(folders: Sequence[str | os.PathLike], runs: str | os.PathLike) -> list[Path]:
    """The models' records, without their weights, under ``runs/<model>/``: what the tables and figures were made from,
    and what a publication keeps (the weights are shared through DVC, not git)."""
    import shutil

    from ..atomic import atomic_dir

    written = []
    with atomic_dir(runs, kind="pretrained models' records") as tmp:
        for folder in map(Path, folders):
            for name in RECORD_FILES:
                if (folder / name).is_file():
                    (tmp / folder.name).mkdir(exist_ok=True)
                    shutil.copy2(folder / name, tmp / folder.name / name)
                    written.append(Path(runs) / folder.name / name)
    return written


def pretrain_report(
    folders: Sequence[str | os.PathLike],
    tables: str | os.PathLike,
    figures: str | os.PathLike,
    runs: str | os.PathLike | None = None,
) -> list[Path]:
    """The table and the figure of the models in ``folders`` (model folders, or their records copied by
    :func:`copy_records`), and, with ``runs``, their records copied there."""
    table, curves = read_models(folders)
    caption = (
        "Pretrained models: held-out cross-entropy (nats per predicted token), perplexity and accuracy of the most "
        "likely token, beside the unigram baseline on the same targets (a masked model's targets are its masked "
        "tokens; a causal model's every next token)"
    )
    out = write_table(table, Path(tables) / "pretrain", caption=caption)
    out += curves_figure(table, curves, Path(figures) / "pretrain_curves")
    return out + (copy_records(folders, runs) if runs is not None else [])
