# isoflow workflow: datasets -> embeddings -> optimisation runs (task x model x seed) -> tables and figures.
# The science lives in the `isoflow` package; rules only call its CLI.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "schemas/config.schema.yaml")


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/encode.smk"
include: "rules/optimize.smk"
include: "rules/analyze.smk"


rule all:
    input:
        analysis_outputs(),
