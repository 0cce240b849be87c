# Datasets: fetched through the cache, the mirror, or the canonical URL (login nodes have internet); an own task
# (`own.tasks`) from its file, a declared input.


rule prepare:
    input:
        own_task_file,
    output:
        kept(multiext(f"{DATA}/tasks/{{task}}/", "items.parquet", "examples.parquet", "meta.json")),
    log:
        "logs/prepare/{task}.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
        raw=RAW,
        options=prepare_options,
        mirror=MIRROR,
    shell:
        "isoflow prepare {wildcards.task} --out {params.out} --raw-dir {params.raw} {params.mirror} {params.options} "
        "--quiet > {log} 2>&1"
