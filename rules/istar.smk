# The I-STAR sweep (Rudman & Eickhoff 2024) in the optimisation experiment: task x model x lambda x seed.
# lambda = 0 is the plain run (rule optimize, shared with the paper's runs); other weights go under istar<lambda>/.
# A run that diverges at a large |lambda| is recorded as diverged (--keep-diverged) and reported as such.


rule optimize_istar:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
        embeddings=f"{DATA}/embeddings/{{model}}/{{task}}/embeddings.npy",
    output:
        parquet=f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.parquet",
        record=f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}/seed{{seed}}.json",
    params:
        task_dir=lambda wildcards, input: os.path.dirname(input.task),
        embeddings=lambda wildcards, input: os.path.dirname(input.embeddings),
        out=lambda wildcards, output: output.parquet[: -len(".parquet")],
        device=DEVICE,
        steps=steps_for,
        sample_cap=config.get("sample_cap", 20000),
        zeta=ZETA,
        label_centred_every=LABEL_CENTRED_EVERY,
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
        "isoflow optimize --task {wildcards.task} --model {wildcards.model} --seed {wildcards.seed} "
        "--istar {wildcards.lam} --zeta {params.zeta} --keep-diverged --label-centred-every {params.label_centred_every} "
        "--steps {params.steps} --sample-cap {params.sample_cap} --device {params.device} "
        "--task-dir {params.task_dir} --embeddings {params.embeddings} --out {params.out} --quiet > {log} 2>&1"


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
        ISTAR_REPORT,
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
