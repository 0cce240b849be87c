# The dynamics section: every checkpoint of a series measured layer by layer (one job per checkpoint x corpus x kind of
# point: the layers section's measures at the section's cheaper settings), the same points at each checkpoint; and
# each checkpoint's layers compared with the next one's and the last one's (one layers-cross job per pair x corpus).


rule dynamics:
    input:
        dynamics_files(),


rule dynamics_runs:
    input:
        runs_of_dynamics(),
        cka_of_dynamics(),


rule dynamics_run:
    input:
        lambda wildcards: files_of_model(wildcards.series),
        corpus_files,
    output:
        kept(multiext(f"{Measurement.pattern(RESULTS)}/", *LAYER_FILES)),
    log:
        Measurement.log_pattern(),
    benchmark:
        Measurement.benchmark_pattern(RESULTS)
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=planned_measurement("mem_mb"),
        disk_mb=planned_measurement("disk_mb"),
        runtime=planned_measurement("runtime"),
    params:
        raw=RAW,
        mirror=MIRROR,
        model=series_option,
        out=lambda wildcards, output: os.path.dirname(output[0]),
        device=DEVICE,
        settings=dynamics_settings,
        corpus=corpus_option,
    shell:
        "isoflow layers {params.model} --corpus {params.corpus} --corpus-name {wildcards.corpus} "
        "--types {wildcards.points} {params.settings} "
        "--device {params.device} --out {params.out} "
        "--raw-dir {params.raw} {params.mirror} > {log} 2>&1"


rule dynamics_cka:
    input:
        lambda wildcards: files_of_model(wildcards.series),
        corpus_files,
    output:
        kept(multiext(f"{Comparison.pattern(RESULTS)}/", *CROSS_FILES)),
    log:
        Comparison.log_pattern(),
    benchmark:
        Comparison.benchmark_pattern(RESULTS)
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=30,
    params:
        raw=RAW,
        mirror=MIRROR,
        model=series_option,
        other=lambda wildcards: checkpoint_option(wildcards.series, wildcards.later, flag="other"),
        corpus=corpus_option,
        out=lambda wildcards, output: os.path.dirname(output[0]),
        device=DEVICE,
        words=DYNAMICS.get("cka_words"),
    shell:
        "isoflow layers-cross {params.model} {params.other} --corpus {params.corpus} --corpus-name {wildcards.corpus} "
        "--words {params.words} --device {params.device} --out {params.out} "
        "--raw-dir {params.raw} {params.mirror} > {log} 2>&1"


rule dynamics_report:
    input:
        runs_of_dynamics(),
        cka_of_dynamics(),
    output:
        tables=kept(reported(DYNAMICS_TABLES, "dynamics")),
        figures=kept(reported(DYNAMICS_FIGURES, "dynamics")),
    log:
        "logs/dynamics_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        runs=lambda wildcards, input: [os.path.dirname(path) for path in input],
        tables=lambda wildcards, output: os.path.dirname(output.tables[0]),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
    shell:
        "isoflow dynamics-report {params.runs} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
