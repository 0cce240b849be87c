# Optimisation runs (the paper's and the I-STAR sweep's): one job per task x model (x lambda) x seed, or, with
# `group_seeds: true` (the GPU configs), one job per task x model (x lambda) running every seed in one process (a GPU
# job's start-up costs more than its seeds); the records are the same files either way, written only when each run
# completes. lambda = 0 is the plain run (rule optimize); other weights go under istar<lambda>/ (rule optimize_istar).
# A run that diverges at a large |lambda| is recorded as diverged (--keep-diverged) and reported as such.


rule optimize:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
        embeddings=f"{DATA}/embeddings/{{model}}/{{task}}/embeddings.npy",
    output:
        parquet=run_files(f"{RESULTS}/trajectories/{{task}}/{{model}}", ".parquet"),
        record=run_files(f"{RESULTS}/trajectories/{{task}}/{{model}}", ".json"),
    log:
        f"logs/optimize/{{task}}/{{model}}/{RUN_LOG}.log",
    benchmark:
        f"{RESULTS}/benchmarks/optimize/{{task}}/{{model}}/{RUN_LOG}.tsv"
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
        "--sample-cap {params.sample_cap} --zeta {params.zeta} --device {params.device} "
        "--label-centred-every {params.label_centred_every} --task-dir {params.task_dir} "
        "--embeddings {params.embeddings} {params.istar} {params.seeds} > {log} 2>&1"


use rule optimize as optimize_istar with:
    output:
        parquet=run_files(f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}", ".parquet"),
        record=run_files(f"{RESULTS}/trajectories/{{task}}/{{model}}/istar{{lam}}", ".json"),
    log:
        f"logs/optimize/{{task}}/{{model}}/istar{{lam}}/{RUN_LOG}.log",
    benchmark:
        f"{RESULTS}/benchmarks/optimize/{{task}}/{{model}}/istar{{lam}}/{RUN_LOG}.tsv"
    params:
        **OPTIMIZE_PARAMS,
        istar=lambda wildcards: f"--istar {wildcards.lam} --keep-diverged",
