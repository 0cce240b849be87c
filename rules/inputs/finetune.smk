# Input functions and outputs of the finetune section (rules/finetune.smk): functions only, as Snakemake's linter wants them apart
# from rules.

# A run's files as the rules' outputs name them: its run id (isoflow.finetune.runs), which the library writes and reads.
FINETUNE_RUN = finetune_runs.SweepRun.pattern(RESULTS)
FINETUNE_LR_RUN = finetune_runs.LrRun.pattern(RESULTS)
SAME_AS = FINETUNE.get("same_as")  # a runs folder whose namesakes the runs are compared with, bit for bit
# Runs with states_points write their token states (outside runs/, deleted once the seed floor has read them); the
# floor needs two seeds or more.
STATES_POINTS = FINETUNE.get("states_points") or 0
SEED_FLOOR = bool(STATES_POINTS) and len(FINETUNE.get("seeds", [])) > 1
FINETUNE_STATES = {"states": temp(finetune_runs.SweepRun.states_pattern(RESULTS))} if SEED_FLOOR else {}


def settings_of(reg):
    """The section's settings a run of regulariser ``reg`` is given: the unit of the mean-direction control's weight
    (matched_pull_from) to its runs alone, and to them not I-STAR's (istar_pull), which the others have always been
    given."""
    drop = "istar_pull" if reg == "meandir" else "matched_pull_from"
    return {k: v for k, v in FINETUNE.items() if k != drop}


def finetune_options(wildcards, output):
    """The section's settings as `isoflow finetune` options (isoflow.finetune.settings declares them and their defaults,
    which the schema filled in); CosReg runs take cosreg_points; where the seed floor is made, where the states go."""
    points = FINETUNE["cosreg_points"] if wildcards.reg == "cosreg" else FINETUNE["points"]
    values = {**settings_of(wildcards.reg), "points": points}
    if not SEED_FLOOR:  # one seed: no floor to write states for
        values["states_points"] = 0
    states = f" --states-out {output.states}" if SEED_FLOOR else ""
    return command_line(FinetuneSettings, values) + states


# The learning-rate candidates, the baselines and the gradients write no states.
UNSTATED = {**settings_of("istar"), "states_points": 0}


def finetune_records():
    """Every run: istar<lambda> for each I-STAR weight (0: the plain run), cosreg<w> and meandir<w> for each non-zero
    CosReg and control weight."""
    return [f"{run.path(RESULTS)}.json" for run in finetune_runs.sweep_runs(FINETUNE)]


LR_CANDIDATES = FINETUNE.get("lr_candidates") or []


def lr_candidate_records(wildcards):
    """The plain candidate runs (λ = 0, the first seed) of one task × model, one per candidate learning rate."""
    return [f"{run.path(RESULTS)}.json" for run in finetune_runs.lr_runs(FINETUNE, wildcards.task, wildcards.model)]


def matched_pull(wildcards):
    """The run whose recorded pull a mean-direction control run matches (finetune.matched_pull_from), seed by seed."""
    folder = FINETUNE.get("matched_pull_from")
    return [finetune_runs.in_arm(folder, wildcards.seed, ".parquet")] if folder and wildcards.reg == "meandir" else []


def lr_choice(wildcards):
    """The learning-rate choice a run of the sweep reads, where the config has candidates."""
    return [finetune_runs.LrChoice(wildcards.task, wildcards.model).path(RESULTS) + ".json"] if LR_CANDIDATES else []


# What every fine-tuning run's command is given, the sweep's runs and the learning-rate candidates' alike.
FINETUNE_PARAMS = dict(
    task_dir=lambda wildcards, input: os.path.dirname(input.task),
    **MODEL_PARAMS,
    device=DEVICE,
)


# What both baseline rules (rules/finetune.smk) run: the sweep's settings, so that its splits are the runs' own.
BASELINE_PARAMS = dict(
    task_dir=lambda wildcards, input: os.path.dirname(input.task),
    raw=RAW,
    mirror=MIRROR,
    settings=lambda wildcards: command_line(FinetuneSettings, UNSTATED),
)
BASELINE_COMMAND = (
    "isoflow finetune-baseline --task {wildcards.task} {params.settings} --task-dir {params.task_dir} "
    "--out {output.record} --raw-dir {params.raw} {params.mirror} {params.every} > {log} 2>&1"
)


def finetune_baselines():
    """Each task's bag-of-words baseline on the runs' own splits; where the runs train on a subset
    (finetune.max_train), also on every training example."""
    every = (False, True) if FINETUNE.get("max_train") else (False,)
    kinds = (finetune_runs.Baseline, finetune_runs.BaselineAllTraining)[: len(every)]
    return [kind(t).path(RESULTS) + ".json" for t in FINETUNE.get("tasks", []) for kind in kinds]


GRADIENT_BATCHES = FINETUNE.get("gradient_batches") or 0


def finetune_gradients():
    """Each task x model's gradients at its pretrained model, where the config asks for them (gradient_batches)."""
    if not GRADIENT_BATCHES:
        return []
    return [finetune_runs.Gradients(t, m).path(RESULTS) + ".json" for t, m in finetune_runs.pairs(FINETUNE)]


def finetune_seed_floors():
    """Each weight's CKA between its seeds, where the runs write their states (states_points) and there are two seeds
    or more."""
    if not SEED_FLOOR:
        return []
    return [floor.path(RESULTS) + ".json" for floor in finetune_runs.seed_floors(FINETUNE)]


def finetune_comparisons():
    """Each run compared with its namesake in the same_as folder, where the config names one (the runs of the arms
    that folder holds)."""
    if not SAME_AS:
        return []
    return [compared.path(RESULTS) + ".json" for compared in finetune_runs.compared_with(FINETUNE, SAME_AS)]


def namesake(wildcards):
    """The run of the same task, model, weight and seed in the same_as folder."""
    return os.path.join(SAME_AS, f"{finetune_runs.SweepRun.of_wildcards(wildcards).identity()}.json")


def seed_floor_states(wildcards):
    """The states files of one weight's runs, every seed."""
    floor = finetune_runs.SeedFloor.of_wildcards(wildcards)
    return [run.states(RESULTS) for run in floor.runs(FINETUNE["seeds"])]


def finetune_run_files():
    runs = [r[: -len(".json")] + suffix for r in finetune_records() for suffix in (".json", ".parquet")]
    return runs + finetune_baselines() + finetune_gradients() + finetune_seed_floors() + finetune_comparisons()


_FINETUNE_TABLES, _FINETUNE_FIGURES = finetune_report_outputs(
    bool(FINETUNE.get("layer_geometry")),
    bool(finetune_gradients()),
    FINETUNE.get("zeta"),
    SEED_FLOOR,
    bool(SAME_AS),
    any(float(w) != 0 for w in FINETUNE.get("meandir_weights", [])),
)
FINETUNE_TABLES = tables_of("finetune", _FINETUNE_TABLES)
FINETUNE_FIGURES = figures_of("finetune", _FINETUNE_FIGURES)
FINETUNE_REPORT = FINETUNE_TABLES + FINETUNE_FIGURES


def finetune_files():
    return FINETUNE_REPORT if finetune_records() else []


def runs_of_finetune():
    return (
        finetune_records()
        + finetune_baselines()
        + finetune_gradients()
        + finetune_seed_floors()
        + finetune_comparisons()
    )
