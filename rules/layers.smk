# The layers section (Cai et al. 2021): one analysis per model (or static vectors) x corpus, then tables and figures.


# ----- Cai et al. across layers (layers.smk) ------------------------------------------------------------------


rule layers:
    input:
        layers_files(),


rule layers_runs:
    input:
        runs_of_layers(),


rule layers_run:
    input:
        model_files,
        corpus_files,
    output:
        kept(multiext(f"{Analysis.pattern(RESULTS)}/", *LAYER_FILES)),
    log:
        Analysis.log_pattern(),
    benchmark:
        Analysis.benchmark_pattern(RESULTS)
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=gpus_for,
        mem_mb=planned("mem_mb"),
        disk_mb=planned("disk_mb"),
        runtime=planned("runtime"),
    params:
        **MODEL_PARAMS,
        out=lambda wildcards, output: os.path.dirname(output[0]),
        device=DEVICE,
        settings=command_line(LayerSettings, LAYERS),
        corpus=corpus_option,
        own=layer_run_options,
    shell:
        "isoflow layers {params.model} --corpus {params.corpus} --corpus-name {wildcards.corpus} {params.settings} "
        "{params.own}--device {params.device} --out {params.out} "
        "--raw-dir {params.raw} {params.mirror} > {log} 2>&1"


rule layers_cross:
    input:
        lambda wildcards: files_of_model(wildcards.model_a),
        lambda wildcards: files_of_model(wildcards.model_b),
        corpus_files,
    output:
        kept(multiext(f"{CrossComparison.pattern(RESULTS)}/", *CROSS_FILES)),
    log:
        CrossComparison.log_pattern(),
    benchmark:
        CrossComparison.benchmark_pattern(RESULTS)
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=60,
    params:
        raw=RAW,
        mirror=MIRROR,
        model=lambda wildcards: option_of_model(wildcards.model_a),
        other=lambda wildcards: option_of_model(wildcards.model_b, flag="other"),
        corpus=corpus_option,
        out=lambda wildcards, output: os.path.dirname(output[0]),
        device=DEVICE,
        words=LAYERS.get("cross_words"),
    shell:
        "isoflow layers-cross {params.model} {params.other} --corpus {params.corpus} --corpus-name {wildcards.corpus} "
        "--words {params.words} --device {params.device} --out {params.out} "
        "--raw-dir {params.raw} {params.mirror} > {log} 2>&1"


rule layers_report:
    input:
        layer_run_files(),
        cross_run_files(),
    output:
        tables=kept(reported(LAYERS_TABLES, "layers")),
        figures=kept(reported(LAYERS_FIGURES, "layers")),
    log:
        "logs/layers_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        runs=lambda wildcards, input: " ".join(sorted({os.path.dirname(p) for p in input})),
        tables=lambda wildcards, output: os.path.dirname(output.tables[0]),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
    shell:
        "isoflow layers-report {params.runs} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
