# Helpers shared by the rules: targets and per-wildcard options computed from the validated config.

import os

DATA = config.get("data_dir", "data")
RAW = os.path.join(DATA, "raw")
RESULTS = config.get("results_dir", "results")
DEVICE = config.get("device", "auto")
MIRROR = f"--mirror {config['mirror']}" if config.get("mirror") else ""
STATIC_MODELS = {"glove-50d", "word2vec-222"}
WORD_TASKS = {"pos", "pos-wordnet", "supersense"}


wildcard_constraints:
    task=r"[a-z0-9-]+(/[a-z0-9]+)?",
    model=r"[a-z0-9-]+",
    seed=r"\d+",


def paper_pairs():
    return [(e["task"], e["model"]) for e in config["paper"]]


def glue_pairs():
    return [(f"glue/{t}", m) for t in config["glue"]["tasks"] for m in config["glue"]["models"]]


def vocab_of(task):
    """A word task's words come from its (single) static model's vocabulary."""
    models = sorted({m for t, m in paper_pairs() if t == task})
    if len(models) != 1 or models[0] not in STATIC_MODELS:
        raise ValueError(f"config.yaml: word task {task} needs exactly one static model (glove-50d or word2vec-222); got {models}")
    return models[0]


def prepare_options(wildcards):
    return f"--vocab {vocab_of(wildcards.task)}" if wildcards.task in WORD_TASKS else ""


def steps_for(wildcards):
    return config["steps"]["glue" if wildcards.task.startswith("glue/") else "default"]


def gpus_for(wildcards):
    return 0 if wildcards.model in STATIC_MODELS else 1


def trajectories(pairs):
    return [f"{RESULTS}/trajectories/{t}/{m}/seed{s}.parquet" for t, m in pairs for s in config["seeds"]]


def analysis_outputs():
    out = [f"{RESULTS}/tables/correlations_per_run.csv", f"{RESULTS}/figures/silhouette_vs_isoscore.png"]
    if paper_pairs():
        out.append(f"{RESULTS}/tables/correlations.csv")
    if glue_pairs():
        out.append(f"{RESULTS}/tables/correlations_glue.csv")
    return out
