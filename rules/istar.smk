# The I-STAR sweep (Rudman & Eickhoff 2024) in the optimisation experiment: task x model x lambda x seed.
# lambda = 0 is the plain run (rule optimize, shared with the paper's runs); other weights go under istar<lambda>/.
# A run that diverges at a large |lambda| is recorded as diverged (--keep-diverged) and reported as such.


ISTAR_COMMAND = f"{OPTIMIZE_COMMAND}--istar {{wildcards.lam}} --keep-diverged "

if GROUP_SEEDS:

    rule optimize_istar_seeds:
        input:
            **RUN_INPUT,
        output:
            parquet=seed_files(f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}", ".parquet"),
            record=seed_files(f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}", ".json"),
        params:
            **OPTIMIZE_PARAMS,
            seeds=SEED_LIST,
            out=lambda wildcards: f"{RESULTS}/trajectories/{wildcards.task}/{wildcards.model}/istar{wildcards.lam}/seed{{seed}}",
        log:
            "logs/optimize/{task}/{model}/istar{lam}/seeds.log",
        benchmark:
            f"{RESULTS}/benchmarks/optimize/{{task}}/{{model}}/istar{{lam}}/seeds.tsv"
        threads: 2
        resources:
            gpu=1,
            mem_mb=16000,
            runtime=240,
        conda:
            "../envs/isoflow.yaml"
        shell:
            f"{ISTAR_COMMAND}--seeds {{params.seeds}} --out '{{params.out}}' > {{log}} 2>&1"

else:

    rule optimize_istar:
        input:
            **RUN_INPUT,
        output:
            parquet=f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.parquet",
            record=f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.json",
        params:
            **OPTIMIZE_PARAMS,
            out=lambda wildcards, output: output.parquet[: -len(".parquet")],
        log:
            "logs/optimize/{task}/{model}/istar{lam}/seed{seed}.log",
        benchmark:
            f"{RESULTS}/benchmarks/optimize/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.tsv"
        threads: 2
        resources:
            gpu=1,
            mem_mb=16000,
            runtime=240,
        conda:
            "../envs/isoflow.yaml"
        shell:
            f"{ISTAR_COMMAND}--seed {{wildcards.seed}} --out {{params.out}} > {{log}} 2>&1"


rule aggregate_istar:
    input:
        records=istar_records(),
        trajectories=istar_trajectories(),
    output:
        ISTAR_AGGREGATE,
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/aggregate_istar.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow aggregate --out {params.out} {input.records} > {log} 2>&1"


rule istar_report:
    input:
        ISTAR_AGGREGATE,
    output:
        reported(ISTAR_REPORT, "I-STAR in the optimisation experiment"),
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        tables=lambda wildcards, output: os.path.dirname(output[0]),  # tables/istar.csv
        figures=lambda wildcards, output: os.path.dirname(output[-1]),  # figures/istar_*.pdf
    log:
        "logs/istar_report.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow istar-report --aggregate {params.aggregate} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
