# Input functions and outputs of the finetune section (rules/finetune.smk): functions only, as Snakemake's linter wants them apart
# from rules.

from isoflow.finetune.controls import GRADIENTS_FILE as FINETUNE_GRADIENTS_FILE


def finetune_options(wildcards):
    """The section's settings as `isoflow finetune` options (isoflow.finetune.settings declares them and their defaults,
    which the schema filled in); CosReg runs take cosreg_points."""
    values = {**FINETUNE, "points": FINETUNE["cosreg_points"] if wildcards.reg == "cosreg" else FINETUNE["points"]}
    return command_line(FinetuneSettings, values)


def finetune_pairs():
    return [(t, m) for t in FINETUNE.get("tasks", []) for m in FINETUNE.get("models", [])]


def finetune_records():
    """Every run: istar<lambda> for each I-STAR weight (0: the plain run), cosreg<w> for each non-zero CosReg weight."""
    runs = [lambda_dir(float(lam)) for lam in FINETUNE.get("istar_lambdas", [])]
    runs += [regulariser_dir("cosreg", float(w)) for w in FINETUNE.get("cosreg_weights", []) if float(w) != 0]
    return [
        f"{section_dir('finetune')}/runs/{t}/{m}/{run}/seed{s}.json"
        for t, m in finetune_pairs()
        for run in runs
        for s in FINETUNE.get("seeds", [])
    ]


LR_CANDIDATES = [float(lr) for lr in FINETUNE.get("lr_candidates") or []]


def lr_selection_dir(task, model):
    return f"{section_dir('finetune')}/runs/{task}/{model}/lr-selection"


def lr_candidate_records(wildcards):
    """The plain candidate runs (λ = 0, the first seed) of one task × model, one per candidate learning rate."""
    seed = FINETUNE["seeds"][0]
    return [f"{lr_selection_dir(wildcards.task, wildcards.model)}/lr{lr:g}/seed{seed}.json" for lr in LR_CANDIDATES]


def lr_choice(wildcards):
    """The learning-rate choice a run of the sweep reads, where the config has candidates."""
    return [f"{lr_selection_dir(wildcards.task, wildcards.model)}/chosen.json"] if LR_CANDIDATES else []


def finetune_baselines():
    """Each task's bag-of-words baseline on the runs' own splits."""
    return [f"{section_dir('finetune')}/runs/{t}/bag-of-words.json" for t in FINETUNE.get("tasks", [])]


GRADIENT_BATCHES = FINETUNE.get("gradient_batches") or 0


def finetune_gradients():
    """Each task x model's gradients at its pretrained model, where the config asks for them (gradient_batches)."""
    if not GRADIENT_BATCHES:
        return []
    return [f"{section_dir('finetune')}/runs/{t}/{m}/{FINETUNE_GRADIENTS_FILE}" for t, m in finetune_pairs()]


def finetune_run_files():
    runs = [r[: -len(".json")] + suffix for r in finetune_records() for suffix in (".json", ".parquet")]
    return runs + finetune_baselines() + finetune_gradients()


_FINETUNE_TABLES, _FINETUNE_FIGURES = finetune_report_outputs(
    bool(FINETUNE.get("layer_geometry")), bool(finetune_gradients()), FINETUNE.get("zeta")
)
FINETUNE_TABLES = tables_of("finetune", _FINETUNE_TABLES)
FINETUNE_FIGURES = figures_of("finetune", _FINETUNE_FIGURES)
FINETUNE_REPORT = FINETUNE_TABLES + FINETUNE_FIGURES


def finetune_files():
    return FINETUNE_REPORT if finetune_records() else []


def runs_of_finetune():
    return finetune_records() + finetune_baselines() + finetune_gradients()
