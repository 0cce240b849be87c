# Aggregate every run of the config into one table, then the correlation tables and Tables 1-2.


rule aggregate:
    input:
        ancient(trajectories(all_pairs())),
    output:
        AGGREGATE,
    params:
        results=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/aggregate.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow aggregate --results {params.results} --out {params.out} > {log} 2>&1"


rule tables:
    input:
        ancient(AGGREGATE),
    output:
        table_files(),
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/tables.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow tables --aggregate {params.aggregate} --out {params.out} > {log} 2>&1"
