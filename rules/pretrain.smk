# The pretrain section: plain language models of our own; the pretraining corpus (no task's text), one model per entry of pretrain.models
# (a GPU job; hours on a CPU, resumed from its checkpoint if stopped), then their curves and held-out scores.


rule pretrain:
    input:
        pretrain_files(),


rule pretrain_runs:
    input:
        runs_of_pretrain(),


rule pretrain_corpus:
    input:
        pretrain_corpus_inputs,
    output:
        kept(directory(PRETRAIN_CORPUS)),
    log:
        "logs/pretrain/corpus.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        options=pretrain_corpus_options,
        raw=RAW,
        mirror=MIRROR,
    shell:
        "isoflow pretrain-corpus {params.options} --raw-dir {params.raw} {params.mirror} --out {output} > {log} 2>&1"


rule pretrain_model:
    input:
        PRETRAIN_CORPUS,
    output:
        kept(directory(f"{DATA}/pretrained/{{pretrained}}")),
    log:
        layout.log_path("pretrain", "{pretrained}"),
    benchmark:
        layout.benchmark_path(RESULTS, "pretrain", "{pretrained}")
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=360,
    params:
        options=pretrain_options,
        device=DEVICE,
    shell:
        "isoflow pretrain --corpus {input} --out {output} {params.options} --device {params.device} > {log} 2>&1"


rule pretrain_report:
    input:
        [pretrained_folder(name) for name in PRETRAINED],
    output:
        tables=kept(reported(PRETRAIN_TABLES, "pretrain")),
        figures=kept(reported(PRETRAIN_FIGURES, "pretrain")),
        runs=kept(directory(layout.runs_dir(RESULTS, "pretrain"))),
    log:
        "logs/pretrain_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        tables=lambda wildcards, output: os.path.dirname(output.tables[0]),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
    shell:
        "isoflow pretrain-report {input} --tables {params.tables} --figures {params.figures} --runs {output.runs} > {log} 2>&1"
