# Figures: silhouette and log-normalised IsoScore across training, and silhouette against IsoScore.


rule figures:
    input:
        AGGREGATE,
    output:
        reported(FIGURES, "Main tasks"),
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/figures.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow figures --aggregate {params.aggregate} --out {params.out} > {log} 2>&1"
