# Aggregate exactly the runs of the config (passed on the command line) into one table, then the correlation
# tables and Tables 1-2.


rule aggregate:
    input:
        records=records(all_pairs()),
        trajectories=trajectories(all_pairs()),
    output:
        AGGREGATE,
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/aggregate.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow aggregate --out {params.out} {input.records} > {log} 2>&1"


rule tables:
    input:
        AGGREGATE,
    output:
        reported(table_files(), "Main tasks"),
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/tables.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow tables --aggregate {params.aggregate} --out {params.out} > {log} 2>&1"
