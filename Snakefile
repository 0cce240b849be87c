# isoflow workflow: datasets -> embeddings -> runs -> aggregates -> tables and figures, for three papers' experiments.
# The science lives in the `isoflow` package; rules only call its CLI. Each section's rules and targets: rules/*.smk.
from snakemake.utils import min_version

min_version("9.0")


# config.yaml is the default; a file given with --configfile replaces it (it is not merged into it): a config file,
# with its base (`base:`) and the settings classes' defaults (schemas/config.schema.yaml), says everything about its
# runs. `--config key=value` still overrides single keys.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "rules/config.smk"


report: "report/workflow.rst"


include: "rules/common.smk"


# Each section's input functions and outputs (rules/inputs/), then its rules, in the registry's order (isoflow.sections).
for name in SECTIONS:

    include: f"rules/inputs/{name}.smk"


include: "rules/inputs/targets.smk"
include: "rules/inputs/data.smk"


for name in SECTIONS:

    include: f"rules/{name}.smk"


include: "rules/targets.smk"
include: "rules/data.smk"
include: "rules/encode.smk"


# Every table and figure the config enables.
rule all:
    default_target: True
    input:
        report_files(),


# A failed job's isoflow error line on the terminal, not only in its log.
onerror:
    report_failures(log)


onsuccess:
    finished(log)
