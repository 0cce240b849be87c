# I-STAR's AIM 1 (the poster's Figure 4): IsoScore and IsoScore* on mini-batches of Gaussian clouds of known isotropy.


rule stability:
    input:
        stability_files(),


rule istar_stability:
    output:
        reported(STABILITY_REPORT, "I-STAR: IsoScore* on mini-batches"),
        runs=f"{RESULTS}/stability/runs.parquet",
        meta=f"{RESULTS}/stability/meta.json",
    log:
        "logs/istar_stability.log",
    conda:
        "../envs/isoflow.yaml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        options=stability_options,
        runs=lambda wildcards, output: os.path.dirname(output.runs),
        tables=lambda wildcards, output: os.path.dirname(output[0]),  # tables/istar_stability.csv
        figures=lambda wildcards, output: os.path.dirname(output[3]),  # figures/istar_stability.png
    shell:
        "isoflow istar-stability {params.options} --runs {params.runs} --tables {params.tables} --figures {params.figures} > {log} 2>&1"
