# Input functions and outputs of across sections (rules/targets.smk): functions only, as Snakemake's linter wants them apart
# from rules.


def all_task_model_pairs():
    """Every (task, model) whose embeddings the config's optimisation runs read (isoflow.layout)."""
    return optimize_runs.embedding_pairs(OPTIMIZE, ISTAR)


def all_tasks():
    """Every task the config prepares (fine-tuning needs only the task, no embeddings)."""
    return sorted({t for t, _ in all_task_model_pairs()} | {t for t, _ in finetune_runs.pairs(FINETUNE)})


def report_files():
    """Every table and figure: the default target `all` and its alias `report`; each section's `<name>_files()` (the
    files its config enables), in the registry's order (isoflow.sections)."""
    return [path for name in SECTIONS for path in globals()[f"{name}_files"]()]
