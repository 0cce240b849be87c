"""The dynamics section's report: every checkpoint's layers in one table, the anchors' findings read on it, and three
figures (:mod:`.figures`).

Two kinds of run folder are read: a checkpoint × corpus measurement on one kind of point
(``runs/<series>/<corpus>/<points>/<revision>/``, a layers analysis: its ``layers.parquet``) and a comparison of two
checkpoints (``runs/cka/<series>/<corpus>/<revision>/<later>/``, a layers-cross analysis on words: its
``cross.parquet``). The table ``dynamics`` is the measurements' rows, each with its series, the model it is a seed of
(the series' name without ``-seed<N>``: ``plain-gpt2-seed1`` is a seed of ``plain-gpt2``), its points, its revision and
its step; ``dynamics_cka`` has a row per checkpoint × layer of each series and corpus: the layer's linear CKA to the
same layer at the previous checkpoint (``cka_to_previous``; empty at the first) and at the last (``cka_to_last``; empty
at the last). The readings (``dynamics_readings``) are :func:`isoflow.dynamics.readings.readings` of the first table.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..checkpoints import step_of
from ..reporting.tables import write_table
from .readings import readings
from .runs import Comparison, Measurement

CKA = ("cka_to_previous", "cka_to_last")  # the columns the comparisons fill
IDS = ("model", "series", "corpus", "points", "revision", "step")  # a row's first columns, before its layer's
CHECKPOINT = ["series", "corpus", "revision", "layer"]  # a comparison's row: a checkpoint's layer
LAYERS = ("layers.parquet", "layers.csv")  # a measurement's rows: in its run folder, and in a publication


def _named(folder: Path) -> Measurement | Comparison:
    """The run a folder holds (a checkpoint's measurement, or two checkpoints compared); a folder that is neither is
    refused in one line."""
    for kind, tables in ((Comparison, ("cross.parquet",)), (Measurement, LAYERS)):
        run = kind.of_folder(folder)
        if run is not None and any((folder / table).is_file() for table in tables):
            if step_of(run.revision) is None:
                raise ValueError(f"{folder}: revision {run.revision!r} names no step (step<N>); rename its folder")
            return run
    raise FileNotFoundError(
        f"{folder}: not a checkpoint's measurement (<series>/<corpus>/<points>/<revision>/layers.parquet) nor a "
        "comparison of two (cka/<series>/<corpus>/<revision>/<later>/cross.parquet); run `snakemake dynamics_runs` "
        "first"
    )


def _layers(folder: Path) -> pd.DataFrame:
    """A measurement's rows: its layers.parquet, or in a publication its layers.csv (the same numbers, exactly: pandas
    writes floats with every digit they need)."""
    if (folder / "layers.parquet").is_file():
        return pd.read_parquet(folder / "layers.parquet")
    return pd.read_csv(folder / "layers.csv")


def _identified(frame: pd.DataFrame, run: Measurement) -> pd.DataFrame:
    ids = {
        "model": run.model,
        "series": run.series,
        "corpus": run.corpus,
        "points": run.points,
        "revision": run.revision,
        "step": step_of(run.revision),
    }
    frame = frame.drop(columns=["model", "corpus"], errors="ignore")
    for i, (key, value) in enumerate(ids.items()):
        frame.insert(i, key, value)
    return frame


def _same_layer_cka(folder: Path, run: Comparison) -> pd.DataFrame:
    """Each layer's CKA to the same layer of the later checkpoint, on all the words compared: (series, corpus,
    revision, later, layer, cka)."""
    cross = pd.read_parquet(folder / "cross.parquet")
    same = cross[(cross.subset == "all") & (cross.layer_a == cross.layer_b)]
    return pd.DataFrame(
        {"series": run.series, "corpus": run.corpus, "revision": run.revision, "later": run.later,
         "layer": same.layer_a.to_numpy(), "cka": same.cka.to_numpy()}
    )  # fmt: skip


def cka_table(table: pd.DataFrame, pairs: list[pd.DataFrame]) -> pd.DataFrame:
    """A row per checkpoint × layer of each series and corpus of ``table`` (the measurements), with :data:`CKA`'s
    columns: a comparison of a checkpoint with the next fills the later one's ``cka_to_previous``, one with the last
    checkpoint the earlier one's ``cka_to_last`` (both, for the last two)."""
    checkpoints = table[["model", *CHECKPOINT[:3], "step", "layer"]].drop_duplicates()
    filled = []
    for pair in pairs:
        key = pair.iloc[0]
        series = checkpoints[(checkpoints.series == key.series) & (checkpoints.corpus == key.corpus)]
        order = series.drop_duplicates("revision").sort_values("step").revision.tolist()
        if key.revision not in order or key.later not in order:
            raise ValueError(f"{key.series} on {key.corpus}: {key.revision} is compared with {key.later}, whose "
                             "measurement is not among the runs given; give both checkpoints' run folders")  # fmt: skip
        if order.index(key.later) == order.index(key.revision) + 1:
            filled.append(pair.assign(revision=key.later, to="cka_to_previous"))
        if key.later == order[-1]:
            filled.append(pair.assign(to="cka_to_last"))
    out = checkpoints.assign(**{column: float("nan") for column in CKA}).set_index(CHECKPOINT)
    if filled:
        out.update(pd.concat(filled).pivot_table(index=CHECKPOINT, columns="to", values="cka"))
    columns = ["model", "series", "corpus", "revision", "step", "layer", *CKA]
    return out.reset_index()[columns].sort_values(["model", "corpus", "series", "step", "layer"], ignore_index=True)


def read_runs(folders: Sequence[str | os.PathLike]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The layers rows of every measurement, with :data:`IDS` first, sorted by model, corpus, points, series, step and
    layer; and the comparisons' table (:func:`cka_table`)."""
    measured, pairs = [], []
    for folder in map(Path, folders):
        run = _named(folder)
        if isinstance(run, Measurement):
            measured.append(_identified(_layers(folder), run))
        else:
            pairs.append(_same_layer_cka(folder, run))
    if not measured:
        raise ValueError("no checkpoint's measurement given; the report reads the dynamics section's run folders")
    table = pd.concat(measured, ignore_index=True)
    table = table.sort_values(["model", "corpus", "points", "series", "step", "layer"], ignore_index=True)
    return table, cka_table(table, pairs)


def dynamics_report(folders: Sequence[str | os.PathLike], tables: str | os.PathLike, figures: str | os.PathLike):
    """The tables and the figures of the run folders; returns the paths written."""
    from .figures import cka_figure, heatmaps_figure, measures_figure

    table, cka = read_runs(folders)
    caption = (
        "Every checkpoint's layers: the layers section's measures of each checkpoint of each series, on the same "
        "points at every checkpoint (series: a pretraining run; model: what it is a seed of; points: every token, or "
        "each sentence's last; step: the checkpoint's)"
    )
    compared = (
        "How far each layer moves: its linear CKA to the same layer at the previous and at the last checkpoint, on "
        "the same words"
    )
    read = (
        "The anchors' findings read on the series by docs/verdicts.md's rules (A shape across training): one row per "
        "claim, model, corpus and points; the seed is the unit"
    )
    tables, figures = Path(tables), Path(figures)
    return [
        *write_table(table, tables / "dynamics", caption=caption),
        *write_table(cka, tables / "dynamics_cka", caption=compared),
        *write_table(readings(table), tables / "dynamics_readings", caption=read),
        *measures_figure(table, figures / "dynamics_measures"),
        *cka_figure(cka, figures / "dynamics_cka"),
        *heatmaps_figure(table, figures / "dynamics_heatmaps"),
    ]
