# isoflow workflow: datasets -> embeddings -> optimisation runs (task x model x seed) -> aggregate -> tables, figures.
# The science lives in the `isoflow` package; rules only call its CLI. Targets: rules/targets.smk.
from snakemake.utils import min_version, validate

min_version("9.0")


# config.yaml is the default; a file given with --configfile replaces it (it is not merged into it), so a config
# file says everything about its runs. `--config key=value` still overrides single keys.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "rules/config.smk"


report: "report/workflow.rst"


include: "rules/common.smk"


# The default target: every table and figure the config enables. Other targets: rules/targets.smk.
rule all:
    input:
        report_files(),


include: "rules/targets.smk"
include: "rules/data.smk"
include: "rules/encode.smk"
include: "rules/optimize.smk"
include: "rules/analyze.smk"
include: "rules/report.smk"
include: "rules/istar.smk"
include: "rules/layers.smk"
include: "rules/finetune.smk"
