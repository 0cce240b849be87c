# Optimisation runs: one job per task x model x seed, or, with `group_seeds: true` (the GPU configs), one job per
# task x model running every seed in one process (a GPU job's start-up costs more than its seeds); the records are
# the same files either way, written only when each run completes.

OPTIMIZE_PARAMS = dict(
    task_dir=lambda wildcards, input: os.path.dirname(input.task),
    embeddings=lambda wildcards, input: os.path.dirname(input.embeddings),
    device=DEVICE,
    steps=steps_for,
    sample_cap=config.get("sample_cap", 20000),
    zeta=ZETA,
    label_centred_every=LABEL_CENTRED_EVERY,
)
# No --quiet: with stderr in the log, the run writes a line per tenth of its updates (loss, silhouette, IsoScore),
# so a slow job can be told from a stuck one while it runs.
OPTIMIZE_COMMAND = (
    "isoflow optimize --task {wildcards.task} --model {wildcards.model} --steps {params.steps} "
    "--sample-cap {params.sample_cap} --zeta {params.zeta} --device {params.device} "
    "--label-centred-every {params.label_centred_every} --task-dir {params.task_dir} --embeddings {params.embeddings} "
)
RUN_INPUT = dict(
    task=f"{DATA}/tasks/{{task}}/meta.json",
    embeddings=f"{DATA}/embeddings/{{model}}/{{task}}/embeddings.npy",
)

if GROUP_SEEDS:

    rule optimize_seeds:
        input:
            **RUN_INPUT,
        output:
            parquet=seed_files(f"{RESULTS}/trajectories/{{task}}/{{model}}", ".parquet"),
            record=seed_files(f"{RESULTS}/trajectories/{{task}}/{{model}}", ".json"),
        params:
            **OPTIMIZE_PARAMS,
            seeds=SEED_LIST,
            out=lambda wildcards: f"{RESULTS}/trajectories/{wildcards.task}/{wildcards.model}/seed{{seed}}",
        log:
            "logs/optimize/{task}/{model}/seeds.log",
        benchmark:
            f"{RESULTS}/benchmarks/optimize/{{task}}/{{model}}/seeds.tsv"
        threads: 2
        resources:
            gpu=1,
            mem_mb=16000,
            runtime=240,
        conda:
            "../envs/isoflow.yaml"
        shell:
            f"{OPTIMIZE_COMMAND}--seeds {{params.seeds}} --out '{{params.out}}' > {{log}} 2>&1"

else:

    rule optimize:
        input:
            **RUN_INPUT,
        output:
            parquet=f"{RESULTS}/trajectories/{{task}}/{{model}}/seed{{seed}}.parquet",
            record=f"{RESULTS}/trajectories/{{task}}/{{model}}/seed{{seed}}.json",
        params:
            **OPTIMIZE_PARAMS,
            out=lambda wildcards, output: output.parquet[: -len(".parquet")],
        log:
            "logs/optimize/{task}/{model}/seed{seed}.log",
        benchmark:
            f"{RESULTS}/benchmarks/optimize/{{task}}/{{model}}/seed{{seed}}.tsv"
        threads: 2
        resources:
            gpu=1,
            mem_mb=16000,
            runtime=240,
        conda:
            "../envs/isoflow.yaml"
        shell:
            f"{OPTIMIZE_COMMAND}--seed {{wildcards.seed}} --out {{params.out}} > {{log}} 2>&1"
