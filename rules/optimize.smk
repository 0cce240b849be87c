# The optimize section (Mickus et al. 2024): an embedding table trained with a linear classifier on the main tasks
# (config `paper`) and GLUE (`glue`, Appendix A); its runs, their aggregate, the tables and figures.
#
# Runs: one job per task x model x seed, or, with `group_seeds: true` (the GPU configs), one job per task x model
# running every seed in one process (a GPU job's start-up costs more than its seeds); the records are the same files
# either way, written only when each run completes.


# ----- The optimize section: Mickus et al.'s main tasks (config `paper`) and GLUE (`glue`) (optimize.smk) -------


# The classifier of the optimize and istar sections' runs: the paper's linear layer, or a non-linear head whose runs go
# one folder deeper (isoflow.optimize.runs.head_dir), so that they never replace the linear head's.


rule optimize:
    input:
        optimize_files(),


rule optimize_runs:
    input:
        runs_of_optimize(),


rule optimize_run:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
        embeddings=f"{DATA}/embeddings/{{model}}/{{task}}/embeddings.npy",
    output:
        parquet=kept(run_files(".parquet")),
        record=kept(run_files(".json")),
    log:
        job_kind().log_pattern(head=HEAD_DIR),
    benchmark:
        job_kind().benchmark_pattern(RESULTS, head=HEAD_DIR)
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=16000,
        runtime=240,
    params:
        **OPTIMIZE_PARAMS,
        istar="",
    # No --quiet: with stderr in the log, the run writes a line per tenth of its updates (loss, silhouette, IsoScore),
    # so a slow job can be told from a stuck one while it runs.
    shell:
        "isoflow optimize --task {wildcards.task} --model {wildcards.model} --steps {params.steps} "
        "{params.settings} --device {params.device} --task-dir {params.task_dir} "
        "--embeddings {params.embeddings} {params.istar} {params.seeds} > {log} 2>&1"


# Aggregate exactly the runs of the config (passed on the command line), then the tables and figures.
rule optimize_aggregate:
    input:
        records=records_of(trajectories()),
        trajectories=trajectories(),
    output:
        kept(OPTIMIZE_AGGREGATE),
    log:
        "logs/optimize_aggregate.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "isoflow optimize-aggregate --out {params.out} {input.records} > {log} 2>&1"


rule optimize_report:
    input:
        OPTIMIZE_AGGREGATE,
    output:
        tables=kept(reported(optimize_tables(), "optimize")),
        figures=kept(reported(OPTIMIZE_FIGURES, "optimize")),
    log:
        "logs/optimize_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        tables=lambda wildcards, output: os.path.dirname(output.tables[0]),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
    shell:
        "isoflow optimize-report --aggregate {params.aggregate} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
