# Input functions and outputs of the finetune section (rules/finetune.smk): functions only, as Snakemake's linter wants them apart
# from rules.

# A run's files as the rules' outputs name them (isoflow.layout: the library names them the same way).
FINETUNE_RUN_ID = layout.FINETUNE_RUN
FINETUNE_RUN = layout.run_path(RESULTS, "finetune", FINETUNE_RUN_ID)
FINETUNE_LR_ID = layout.FINETUNE_LR_RUN
FINETUNE_LR_RUN = layout.run_path(RESULTS, "finetune", FINETUNE_LR_ID)
FINETUNE_LR_CHOICE = layout.finetune_lr_choice(RESULTS, "{task}", "{model}")
FINETUNE_BASELINE = layout.finetune_baseline(RESULTS, "{task}")
FINETUNE_BASELINE_ALL = layout.finetune_baseline(RESULTS, "{task}", every=True)
FINETUNE_GRADIENTS = layout.finetune_gradients(RESULTS, "{task}", "{model}")
FINETUNE_SAME_AS_ID = layout.FINETUNE_SAME_AS
FINETUNE_SAME_AS = layout.run_path(RESULTS, "finetune", FINETUNE_SAME_AS_ID) + ".json"
SAME_AS = FINETUNE.get("same_as")  # a runs folder whose namesakes the runs are compared with, bit for bit
FINETUNE_SEED_FLOOR = layout.finetune_seed_floor(RESULTS, "{task}", "{model}", reg="{reg}", weight="{weight}")
# Runs with states_points write their token states (outside runs/, deleted once the seed floor has read them); the
# floor needs two seeds or more.
STATES_POINTS = FINETUNE.get("states_points") or 0
SEED_FLOOR = bool(STATES_POINTS) and len(FINETUNE.get("seeds", [])) > 1
FINETUNE_STATES = (
    {"states": temp(layout.finetune_states(RESULTS, "{task}", "{model}", "{seed}", reg="{reg}", weight="{weight}"))}
    if SEED_FLOOR
    else {}
)


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
    return [f"{stem}.json" for stem in layout.finetune_runs(FINETUNE, RESULTS)]


LR_CANDIDATES = FINETUNE.get("lr_candidates") or []


def lr_candidate_records(wildcards):
    """The plain candidate runs (λ = 0, the first seed) of one task × model, one per candidate learning rate."""
    return [f"{stem}.json" for stem in layout.finetune_lr_runs(FINETUNE, RESULTS, wildcards.task, wildcards.model)]


def matched_pull(wildcards):
    """The run whose recorded pull a mean-direction control run matches (finetune.matched_pull_from), seed by seed."""
    folder = FINETUNE.get("matched_pull_from")
    stem = layout.seed_stem(wildcards.seed)
    return [os.path.join(folder, f"{stem}.parquet")] if folder and wildcards.reg == "meandir" else []


def lr_choice(wildcards):
    """The learning-rate choice a run of the sweep reads, where the config has candidates."""
    return [layout.finetune_lr_choice(RESULTS, wildcards.task, wildcards.model)] if LR_CANDIDATES else []


# What every fine-tuning run's command is given, the sweep's runs and the learning-rate candidates' alike.
FINETUNE_PARAMS = dict(
    task_dir=lambda wildcards, input: os.path.dirname(input.task),
    out=lambda wildcards, output: output.record[: -len(".json")],
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
    return [layout.finetune_baseline(RESULTS, t, e) for t in FINETUNE.get("tasks", []) for e in every]


GRADIENT_BATCHES = FINETUNE.get("gradient_batches") or 0


def finetune_gradients():
    """Each task x model's gradients at its pretrained model, where the config asks for them (gradient_batches)."""
    if not GRADIENT_BATCHES:
        return []
    return [layout.finetune_gradients(RESULTS, t, m) for t, m in layout.finetune_pairs(FINETUNE)]


def finetune_seed_floors():
    """Each weight's CKA between its seeds, where the runs write their states (states_points) and there are two seeds
    or more."""
    if not SEED_FLOOR:
        return []
    return layout.finetune_seed_floors(FINETUNE, RESULTS)


def finetune_comparisons():
    """Each run compared with its namesake in the same_as folder, where the config names one."""
    if not SAME_AS:
        return []
    return layout.finetune_comparisons(FINETUNE, RESULTS)


def namesake(wildcards):
    """The run of the same task, model, weight and seed in the same_as folder."""
    identity = layout.finetune_id(
        wildcards.task, wildcards.model, wildcards.seed, reg=wildcards.reg, weight=wildcards.weight
    )
    return os.path.join(SAME_AS, f"{identity}.json")


def seed_floor_states(wildcards):
    """The states files of one weight's runs, every seed."""
    return [
        layout.finetune_states(RESULTS, wildcards.task, wildcards.model, s, reg=wildcards.reg, weight=wildcards.weight)
        for s in FINETUNE["seeds"]
    ]


def finetune_run_files():
    runs = [r[: -len(".json")] + suffix for r in finetune_records() for suffix in (".json", ".parquet")]
    return runs + finetune_baselines() + finetune_gradients() + finetune_seed_floors() + finetune_comparisons()


_FINETUNE_TABLES, _FINETUNE_FIGURES = finetune_report_outputs(
    bool(FINETUNE.get("layer_geometry")),
    bool(finetune_gradients()),
    FINETUNE.get("zeta"),
    SEED_FLOOR,
    bool(SAME_AS),
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
