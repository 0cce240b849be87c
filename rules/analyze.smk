# Tables (correlations, sizes) and figures from every complete trajectory of the configured runs.


rule analyze:
    input:
        trajectories(paper_pairs() + glue_pairs()),
    output:
        analysis_outputs(),
    params:
        results=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),
    log:
        "logs/analyze.log",
    conda:
        "../envs/isoflow.yaml"
    shell:
        "isoflow analyze --results {params.results} > {log} 2>&1"
