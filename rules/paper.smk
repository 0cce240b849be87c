# Mickus et al. (2024): the four main tasks and GLUE (Appendix A), their runs, the aggregate, tables and figures.


rule paper:
    input:
        trajectories(paper_pairs()),


rule glue:
    input:
        trajectories(glue_pairs()),


rule correlations:
    input:
        paper_files(),  # the paper's tables and figures (Mickus et al.)


# Aggregate exactly the runs of the config (passed on the command line), then the tables and figures.
rule aggregate:
    input:
        records=records_of(trajectories(all_pairs())),
        trajectories=trajectories(all_pairs()),
    output:
        AGGREGATE,
    log:
        "logs/aggregate.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "isoflow aggregate --out {params.out} {input.records} > {log} 2>&1"


rule tables:
    input:
        AGGREGATE,
    output:
        reported(table_files(), "Main tasks"),
    log:
        "logs/tables.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "isoflow tables --aggregate {params.aggregate} --out {params.out} > {log} 2>&1"


rule figures:
    input:
        AGGREGATE,
    output:
        reported(FIGURES, "Main tasks"),
    log:
        "logs/figures.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "isoflow figures --aggregate {params.aggregate} --out {params.out} > {log} 2>&1"
