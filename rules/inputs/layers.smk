# Input functions and outputs of the layers section (rules/layers.smk): functions only, as Snakemake's linter wants them apart
# from rules.
import functools

from isoflow.layers.plan import job_resources
from isoflow.layers.runs import Analysis, CrossComparison, analyses, comparisons


def layer_runs():
    """The output directories' tables of every model (and static vectors) x corpus of the `layers` section."""
    return [f"{run.path(RESULTS)}/layers.parquet" for run in analyses(LAYERS)]


def layer_run_files():
    """Every file of every analysis: what the report reads."""
    return [p.replace("layers.parquet", name) for p in layer_runs() for name in LAYER_FILES if name != "layers.csv"]


LAYERS_TABLES = tables_of("layers", LAYERS_REPORT_TABLES)
LAYERS_FIGURES = figures_of("layers", LAYERS_REPORT_FIGURES)
LAYERS_REPORT = LAYERS_TABLES + LAYERS_FIGURES


def cross_runs():
    """The record of every comparison of two models' layers (layers.cross × corpus)."""
    return [f"{run.path(RESULTS)}/cross.json" for run in comparisons(LAYERS)]


def cross_run_files():
    return [p.replace("cross.json", name) for p in cross_runs() for name in CROSS_FILES]


def layers_files():
    return LAYERS_REPORT if layer_runs() else []


def runs_of_layers():
    return layer_runs() + cross_runs()


LAYER_SETTINGS = from_values(LayerSettings, LAYERS)


@functools.cache
def layer_resources(model, settings=LAYER_SETTINGS):
    """A layer run's memory (MiB), disk (MiB) and runtime (minutes), planned from its model's shape and its settings
    (isoflow.layers.plan; the fixed request where the shape is not known before the run)."""
    subset = {"dtype": MODEL_DTYPES.get(model, "auto"), "layers": MODEL_LAYERS.get(model)}
    try:
        return job_resources(model_shape(model), settings, **subset)
    except ValueError as e:  # an index past the model's states, known once its shape is
        raise ValueError(f"own.models.{model}.layers: {str(e).removeprefix('--layers ')}") from None


def layer_run_options(wildcards):
    """`--layers SPEC ` and `--device-map MAP ` for a model whose config names a subset of its states or a placement
    (own.models.<name>.layers, .device_map), each with its space; nothing for a model that names neither."""
    spec, placement = MODEL_LAYERS.get(wildcards.model), MODEL_DEVICE_MAPS.get(wildcards.model)
    return (f"--layers {shlex.quote(spec)} " if spec else "") + (f"--device-map {placement} " if placement else "")


def planned(resource):
    """A layer run's ``resource`` (mem_mb, disk_mb, runtime) as Snakemake asks for it: a function of its wildcards."""
    return lambda wildcards: layer_resources(wildcards.model)[resource]
