# Input functions and outputs of the stability section (rules/stability.smk): functions only, as Snakemake's linter wants them apart
# from rules.


STABILITY_TABLES = tables_of("stability", STABILITY_REPORT_TABLES)
STABILITY_FIGURES = figures_of("stability", STABILITY_REPORT_FIGURES)
STABILITY_RUNS = layout.stability_runs(RESULTS)


def stability_files():
    return STABILITY_TABLES + STABILITY_FIGURES + STABILITY_RUNS if STABILITY else []


def stability_options(wildcards):
    """The section's keys as `isoflow stability` options (isoflow.stability.StabilitySettings declares them)."""
    return command_line(StabilitySettings, STABILITY)


def runs_of_stability():
    """The section's one job writes its runs, table and figure together."""
    return STABILITY_RUNS if STABILITY else []
