# The I-STAR sweep (Rudman & Eickhoff 2024) in the optimisation experiment: task x model x lambda x seed (the runs:
# optimize.smk), its aggregate, table and figures.


rule istar:
    input:
        istar_files(),


rule aggregate_istar:
    input:
        records=records_of(istar_trajectories()),
        trajectories=istar_trajectories(),
    output:
        ISTAR_AGGREGATE,
    log:
        "logs/aggregate_istar.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "isoflow aggregate --out {params.out} {input.records} > {log} 2>&1"


rule istar_report:
    input:
        ISTAR_AGGREGATE,
    output:
        reported(ISTAR_REPORT, "I-STAR in the optimisation experiment"),
    log:
        "logs/istar_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        tables=lambda wildcards, output: os.path.dirname(output[0]),  # tables/istar.csv
        figures=lambda wildcards, output: os.path.dirname(output[-1]),  # figures/istar_*.pdf
    shell:
        "isoflow istar-report --aggregate {params.aggregate} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
