# The stability section (I-STAR's AIM 1, the poster's Figure 4): IsoScore and IsoScore* on mini-batches of Gaussian
# clouds of known isotropy; every estimate, the table and the figure in one job (minutes on a CPU).


# ----- IsoScore* on mini-batches (stability.smk) --------------------------------------------------------------


rule stability:
    input:
        stability_files(),


rule stability_run:
    output:
        tables=kept(reported(STABILITY_TABLES, "stability")),
        figures=kept(reported(STABILITY_FIGURES, "stability")),
        runs=kept(STABILITY_RUNS),
    log:
        "logs/stability.log",
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        options=stability_options,
        runs=lambda wildcards, output: os.path.dirname(output.runs[0]),
        tables=lambda wildcards, output: os.path.dirname(output.tables[0]),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
    shell:
        "isoflow stability {params.options} --runs {params.runs} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
