# Embeddings: one float32 table per (model, task); SBERT models and own model folders use the GPU when there is one.
# Vectors made elsewhere (`own.models.<name>.embeddings`) are imported into the same table instead.


rule encode:
    input:
        f"{DATA}/tasks/{{task}}/items.parquet",
        model_files,
    output:
        kept(multiext(f"{DATA}/embeddings/{{model}}/{{task}}/", "embeddings.npy", "index.parquet", "meta.json")),
    log:
        "logs/encode/{model}/{task}.log",
    wildcard_constraints:
        model=f"(?!{names_regex(OWN_VECTORS)}/)[a-z0-9-]+",
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=gpus_for,
        mem_mb=8000,
        runtime=120,
    params:
        **MODEL_PARAMS,
        task_dir=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
        device=DEVICE,
        batch_size=config["batch_size"],
        pooling=pooling_option,
    shell:
        "isoflow encode {params.model} {params.pooling} --task {wildcards.task} --task-dir {params.task_dir} "
        "--out {params.out} --raw-dir {params.raw} {params.mirror} --device {params.device} "
        "--batch-size {params.batch_size} --force --quiet > {log} 2>&1"


rule import_embeddings:
    input:
        task=f"{DATA}/tasks/{{task}}/items.parquet",
        vectors=own_vectors_file,
    output:
        kept(multiext(f"{DATA}/embeddings/{{model}}/{{task}}/", "embeddings.npy", "index.parquet", "meta.json")),
    log:
        "logs/import_embeddings/{model}/{task}.log",
    wildcard_constraints:
        model=names_regex(OWN_VECTORS),
    conda:
        "../envs/isoflow.yaml"
    params:
        task_dir=lambda wildcards, input: os.path.dirname(input.task),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "isoflow import-embeddings {input.vectors:q} --task {wildcards.task} --model {wildcards.model} "
        "--task-dir {params.task_dir} --out {params.out} --force > {log} 2>&1"
