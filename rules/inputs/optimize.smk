# Input functions and outputs of the optimize section (rules/optimize.smk): functions only, as Snakemake's linter wants them apart
# from rules.


HEAD_DIR = optimize_runs.optimize_head(OPTIMIZE)


def trajectories():
    """Every run the config's optimize section asks for (.parquet)."""
    return [f"{run.path(RESULTS)}.parquet" for run in optimize_runs.optimize_runs(OPTIMIZE)]


LABEL_CENTRED_EVERY = OPTIMIZE["label_centred_every"]
OPTIMIZE_AGGREGATE = [f"{section_dir('optimize')}/aggregate/{name}" for name in ("trajectories.parquet", "runs.csv")]
_OPTIMIZE_TABLES, _OPTIMIZE_FIGURES = optimize_report_outputs(
    main=bool(optimize_runs.paper_pairs(OPTIMIZE)),
    glue=bool(optimize_runs.glue_pairs(OPTIMIZE)),
    seeds=len(OPTIMIZE["seeds"]),
    label_centred=bool(LABEL_CENTRED_EVERY),
)
OPTIMIZE_FIGURES = figures_of("optimize", _OPTIMIZE_FIGURES)


def optimize_tables():
    """What `isoflow optimize-report` writes for this config (isoflow.optimize.settings.report_outputs)."""
    return tables_of("optimize", _OPTIMIZE_TABLES)


def optimize_files():
    return optimize_tables() + OPTIMIZE_FIGURES if optimize_runs.optimize_pairs(OPTIMIZE) else []


# ----- Optimisation runs (grouped or one per seed) (optimize.smk) ---------------------------------------------


def job_kind(istar_lambda=0.0):
    """A job's run id (isoflow.optimize.runs): one seed's run, or the job that runs every seed (group_seeds)."""
    return optimize_runs.run_kind(istar_lambda, grouped=GROUP_SEEDS)


def run_files(suffix, istar_lambda=0.0, seeds=None):
    """A job's outputs: every seed's file when seeds are grouped, else the one seed's."""
    kind = optimize_runs.run_kind(istar_lambda)
    if GROUP_SEEDS:
        return [kind.pattern(RESULTS, head=HEAD_DIR, seed=s) + suffix for s in seeds or OPTIMIZE["seeds"]]
    return kind.pattern(RESULTS, head=HEAD_DIR) + suffix


def seed_option(seeds=None):
    """The job's seeds: --seeds S,S,... (grouped: the seeds planned, ``seeds`` or the config's, as run_files names the
    outputs) or --seed S. Where each seed's run goes is its run id's path under --results, which the command works out
    as run_files does (isoflow.optimize.runs), so neither λ nor a seed reaches the command twice."""

    def option(wildcards):
        if GROUP_SEEDS:
            return f"--seeds {','.join(str(s) for s in seeds or OPTIMIZE['seeds'])} --results {RESULTS}"
        return f"--seed {wildcards.seed} --results {RESULTS}"

    return option


OPTIMIZE_PARAMS = dict(
    task_dir=lambda wildcards, input: os.path.dirname(input.task),
    embeddings=lambda wildcards, input: os.path.dirname(input.embeddings),
    device=DEVICE,
    steps=steps_for,
    # The run's settings the config declares (the schema filled in their defaults): optimize.settings.Settings'.
    settings=command_line(OptimizeSettings, {**OPTIMIZE, **({"zeta": ISTAR["zeta"]} if "zeta" in ISTAR else {})}),
    seeds=seed_option(),
)


def runs_of_optimize():
    """The section's runs (its target `optimize_runs`; the workflow's `runs` gathers every section's)."""
    return trajectories()
