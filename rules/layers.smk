# Cai et al. (2021) across layers: one analysis per model (or static vectors) x corpus, then tables and figures.


rule layers:
    input:
        layers_files(),


rule layer_runs:
    input:
        layer_runs(),


rule layers_run:
    input:
        model_files,
        corpus_files,
    output:
        multiext(f"{RESULTS}/layers/{{model}}/{{corpus}}/", "layers.parquet", "layers.csv", "pca.parquet", "clusters.parquet", "meta.json"),
    log:
        "logs/layers/{model}/{corpus}.log",
    benchmark:
        f"{RESULTS}/layers/benchmarks/{{model}}/{{corpus}}.tsv"  # inside the layers output (its own DVC stage)
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=gpus_for,
        mem_mb=8000,
        runtime=240,
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
        raw=RAW,
        mirror=MIRROR,
        device=DEVICE,
        max_tokens=LAYERS.get("max_tokens", 100000),
        seed=LAYERS.get("seed", 0),
        k_lid=LAYERS.get("k_lid", 100),
        model=model_option,
        corpus=corpus_option,
    shell:
        "isoflow layers {params.model} --corpus {params.corpus} --max-tokens {params.max_tokens} "
        "--seed {params.seed} --k-lid {params.k_lid} --device {params.device} --out {params.out} "
        "--raw-dir {params.raw} {params.mirror} > {log} 2>&1"


rule layers_report:
    input:
        layer_run_files(),
    output:
        reported(LAYERS_REPORT, "Clusters and manifolds across layers (Cai et al. 2021)"),
    log:
        "logs/layers_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        runs=lambda wildcards, input: " ".join(sorted({os.path.dirname(p) for p in input})),
        tables=lambda wildcards, output: os.path.dirname(output[0]),
        figures=lambda wildcards, output: os.path.dirname(output[-1]),
    shell:
        "isoflow layers-report {params.runs} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
