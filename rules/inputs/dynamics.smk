# Input functions and outputs of the dynamics section (rules/dynamics.smk): functions only, as Snakemake's linter wants
# them apart from rules.
from isoflow.dynamics import REPORT_FIGURES, REPORT_TABLES, series_checkpoints
from isoflow.dynamics import runs as dynamics_runs
from isoflow.dynamics.runs import COMPARED, MEASURED, Comparison, Measurement
from isoflow.layers.settings import LayerSettings

DYNAMICS = config.get("dynamics") or {}


def dynamics_checkpoints():
    """(series, revision) of every checkpoint the config's dynamics section measures (isoflow.dynamics)."""
    return series_checkpoints(DYNAMICS, PRETRAINED)


def runs_of_dynamics():
    """Every checkpoint x corpus x points measurement: its layers table (the folder's other files come with it)."""
    return [f"{run.path(RESULTS)}/{MEASURED}" for run in dynamics_runs.measurements(DYNAMICS, PRETRAINED)]


def measurement_values(points):
    """The layers settings of a measurement of ``points``: the section's; for the last-token points, max_sequences
    sentences (one point each) in place of max_tokens."""
    return {**DYNAMICS, "max_tokens": DYNAMICS["max_sequences"]} if points == "last-token" else DYNAMICS


def dynamics_settings(wildcards):
    """The layers settings a measurement's job is given (measurement_values) as options."""
    return command_line(LayerSettings, measurement_values(wildcards.points))


def planned_measurement(resource):
    """A measurement's ``resource`` (mem_mb, disk_mb, runtime), planned as a layer run of its series' shape at its
    settings (isoflow.layers.plan)."""
    return lambda wildcards: layer_resources(
        wildcards.series, from_values(LayerSettings, measurement_values(wildcards.points))
    )[resource]


def cka_of_dynamics():
    """Every comparison of two checkpoints x corpus (isoflow.dynamics.checkpoint_pairs): its table."""
    return [f"{run.path(RESULTS)}/{COMPARED}" for run in dynamics_runs.comparisons(DYNAMICS, PRETRAINED)]


DYNAMICS_TABLES = tables_of("dynamics", REPORT_TABLES)
DYNAMICS_FIGURES = figures_of("dynamics", REPORT_FIGURES)


def dynamics_files():
    """The section's table and figure, when the config measures a series."""
    return DYNAMICS_TABLES + DYNAMICS_FIGURES if dynamics_checkpoints() else []


def checkpoint_option(series, revision, flag="model"):
    """A checkpoint as a command's model (``flag``: `--model`, or `--other` for a comparison's second): the series' own
    option (a pretraining run's folder, a hub id, a folder) at the revision, named <series>-<revision> in the
    records."""
    name = f"{series}-{revision.lower()}"
    at = "--revision" if flag == "model" else f"--{flag}-revision"
    return f"{option_of_model(series, flag=flag, name=name)} {at} {revision}"


def series_option(wildcards):
    """The measured checkpoint's model option."""
    return checkpoint_option(wildcards.series, wildcards.revision)
