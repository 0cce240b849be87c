# The istar section (Rudman & Eickhoff 2024 in the optimisation experiment): task x model x lambda x seed with
# lambda * (1 - IsoScore*) added to the loss; lambda = 0 rows are the optimize section's runs. A run that diverges at
# a large |lambda| is recorded as diverged (--keep-diverged) and reported as such.


# ----- The I-STAR sweep (istar.smk) ---------------------------------------------------------------------------

# The sweep's own seeds (a subset of the config's: its lambda = 0 runs are the optimize section's), else the config's.


rule istar:
    input:
        istar_files(),


rule istar_runs:
    input:
        runs_of_istar(),


use rule optimize_run as istar_run with:
    output:
        parquet=kept(run_files(".parquet", "{istar_lambda}", ISTAR_SEEDS)),
        record=kept(run_files(".json", "{istar_lambda}", ISTAR_SEEDS)),
    log:
        job_kind("{istar_lambda}").log_pattern(head=HEAD_DIR),
    benchmark:
        job_kind("{istar_lambda}").benchmark_pattern(RESULTS, head=HEAD_DIR)
    params:
        **{**OPTIMIZE_PARAMS, "seeds": seed_option(ISTAR_SEEDS)},
        istar=lambda wildcards: f"--istar-lambda {wildcards.istar_lambda} --keep-diverged",


use rule optimize_aggregate as istar_aggregate with:
    input:
        records=records_of(istar_trajectories()),
        trajectories=istar_trajectories(),
    output:
        kept(ISTAR_AGGREGATE),
    log:
        "logs/istar_aggregate.log",


rule istar_baseline_aggregate:
    input:
        runs=ISTAR_BASELINE or [],
        records=baseline_records(),
    output:
        kept(ISTAR_BASELINE_AGGREGATE),
    log:
        "logs/istar_baseline_aggregate.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "isoflow optimize-aggregate --out {params.out} --manifest {input.runs} > {log} 2>&1"


rule istar_report:
    input:
        aggregate=ISTAR_AGGREGATE,
        baseline=ISTAR_BASELINE_AGGREGATE if ISTAR_BASELINE else [],
    output:
        tables=kept(reported(ISTAR_TABLES, "istar")),
        figures=kept(reported(ISTAR_FIGURES, "istar")),
    log:
        "logs/istar_report.log",
    conda:
        "../envs/isoflow.yaml"
    params:
        aggregate=lambda wildcards, input: os.path.dirname(input.aggregate[0]),
        baseline=lambda wildcards, input: f"--baseline {os.path.dirname(input.baseline[0])}" if input.baseline else "",
        tables=lambda wildcards, output: os.path.dirname(output.tables[0]),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
    shell:
        "isoflow istar-report --aggregate {params.aggregate} {params.baseline} --tables {params.tables} "
        "--figures {params.figures} > {log} 2>&1"
