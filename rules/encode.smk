# Embeddings: one float32 table per (model, task); SBERT models use the GPU when there is one.


rule encode:
    input:
        f"{DATA}/tasks/{{task}}/items.parquet",
    output:
        multiext(f"{DATA}/embeddings/{{model}}/{{task}}/", "embeddings.npy", "index.parquet", "meta.json"),
    log:
        "logs/encode/{model}/{task}.log",
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=gpus_for,
        mem_mb=8000,
        runtime=120,
    params:
        task_dir=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
        raw=RAW,
        mirror=MIRROR,
        device=DEVICE,
        batch_size=config.get("batch_size", 64),
    shell:
        "isoflow encode --model {wildcards.model} --dataset {wildcards.task} --task-dir {params.task_dir} "
        "--out {params.out} --raw-dir {params.raw} {params.mirror} --device {params.device} "
        "--batch-size {params.batch_size} --force --quiet > {log} 2>&1"
