# Input functions and outputs of the dynamics section (rules/dynamics.smk): functions only, as Snakemake's linter wants
# them apart from rules.
from isoflow.dynamics import series_checkpoints
from isoflow.layers.settings import LayerSettings

DYNAMICS = config.get("dynamics") or {}


def dynamics_checkpoints():
    """(series, revision) of every checkpoint the config's dynamics section measures (isoflow.dynamics)."""
    return series_checkpoints(DYNAMICS, PRETRAINED)


def runs_of_dynamics():
    """Every checkpoint x corpus measurement: its layers table (the folder's other files come with it)."""
    return [
        f"{layout.dynamics_run(RESULTS, series, corpus, revision)}/layers.parquet"
        for series, revision in dynamics_checkpoints()
        for corpus in DYNAMICS.get("corpora", [])
    ]


DYNAMICS_TABLES = tables_of("dynamics", ["dynamics"])
DYNAMICS_FIGURES = figures_of("dynamics", ["dynamics_measures"])


def dynamics_files():
    """The section's table and figure, when the config measures a series."""
    return DYNAMICS_TABLES + DYNAMICS_FIGURES if dynamics_checkpoints() else []


def series_option(wildcards):
    """The checkpoint's model: the series' own option (a pretraining run's folder, a hub id, a folder) at the revision,
    named <series>-<revision> in the records."""
    name = f"{wildcards.series}-{wildcards.revision.lower()}"
    return f"{option_of_model(wildcards.series, name=name)} --revision {wildcards.revision}"
