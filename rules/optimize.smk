# One optimisation run per task x model x seed; its record is written only when it completes.


rule optimize:
    input:
        task=f"{DATA}/tasks/{{task}}/meta.json",
        embeddings=f"{DATA}/embeddings/{{model}}/{{task}}/embeddings.npy",
    output:
        parquet=f"{RESULTS}/trajectories/{{task}}/{{model}}/seed{{seed}}.parquet",
        record=f"{RESULTS}/trajectories/{{task}}/{{model}}/seed{{seed}}.json",
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
        "isoflow optimize --task {wildcards.task} --model {wildcards.model} --seed {wildcards.seed} "
        "--steps {params.steps} --sample-cap {params.sample_cap} --zeta {params.zeta} --device {params.device} "
        "--label-centred-every {params.label_centred_every} "
        "--task-dir {params.task_dir} --embeddings {params.embeddings} --out {params.out} --quiet > {log} 2>&1"

