# Helpers shared by the rules: targets and per-wildcard options computed from the validated config.
#
# Inputs are plain (no ancient()): a job re-runs when an input is newer than its outputs, and everything downstream of
# a job that runs re-runs too. `dvc pull`/`dvc checkout` write files in arbitrary order, so their mtimes say nothing:
# after a pull, `snakemake --touch` (what `make pull` does) restores their order without re-running anything; see
# README "DVC". DVC's own stages restrict Snakemake to their rules (--allowed-rules), so `dvc repro` never re-runs
# another stage's jobs because of such mtimes.

import os

DATA = config.get("data_dir", "data")
RAW = config.get("raw_dir") or os.path.join(DATA, "raw")
RESULTS = config.get("results_dir", "results")
DEVICE = config.get("device", "auto")
MIRROR = f"--mirror {config['mirror']}" if config.get("mirror") else ""
STATIC_MODELS = {"glove-50d", "word2vec-222", "minilm-words", "mpnet-words"}
WORD_TASKS = {"pos", "pos-wordnet", "supersense", "supersense-unambiguous"}
# Word vectors whose vocabulary (and frequency order, hence a word task's word list) is another model's.
VOCABULARY = {"minilm-words": "glove-50d", "mpnet-words": "glove-50d"}


wildcard_constraints:
    task=r"[a-z0-9-]+(/[a-z0-9]+)?",
    model=r"(?!istar)[a-z0-9-]+",  # never the istar<lambda> directory of I-STAR runs
    seed=r"\d+",
    lam=r"-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?",
    corpus=r"[a-z0-9-]+",


def paper_pairs():
    return [(e["task"], e["model"]) for e in config["paper"]]


def glue_pairs():
    return [(f"glue/{t}", m) for t in config["glue"]["tasks"] for m in config["glue"]["models"]]


def vocab_of(task):
    """A word task's words come from its (single) static model's vocabulary."""
    models = sorted({m for t, m in paper_pairs() + istar_pairs() if t == task})
    vocabularies = sorted({VOCABULARY.get(m, m) for m in models})
    if len(vocabularies) != 1 or not set(models) <= STATIC_MODELS:
        raise ValueError(f"config: word task {task} needs static models that share one vocabulary (glove-50d and its encoded "
                         f"words, or word2vec-222); got {models}")
    return vocabularies[0]


def prepare_options(wildcards):
    return f"--vocab {vocab_of(wildcards.task)}" if wildcards.task in WORD_TASKS else ""


def steps_for(wildcards):
    return config["steps"]["glue" if wildcards.task.startswith("glue/") else "default"]


def gpus_for(wildcards):
    return 0 if wildcards.model in STATIC_MODELS else 1



GROUP_SEEDS = config.get("group_seeds", False)
SEED_LIST = ",".join(str(s) for s in config["seeds"])


def seed_files(stem_dir, suffix):
    """Every seed's file under a directory pattern (the grouped rules' outputs)."""
    return [f"{stem_dir}/seed{s}{suffix}" for s in config["seeds"]]


def trajectories(pairs):
    return [f"{RESULTS}/trajectories/{t}/{m}/seed{s}.parquet" for t, m in pairs for s in config["seeds"]]


def records(pairs):
    """The JSON records of the runs (written last: a run is complete when its record exists)."""
    return [path[: -len(".parquet")] + ".json" for path in trajectories(pairs)]


def all_pairs():
    return paper_pairs() + glue_pairs()


ISTAR = config.get("istar") or {}
ZETA = ISTAR.get("zeta", 0.2)


def istar_pairs():
    return [(t, m) for t in ISTAR.get("tasks", []) for m in ISTAR.get("models", [])]


def istar_lambdas(task):
    """The sweep's weights for one task: istar.task_lambdas[task] where given, else istar.lambdas."""
    return (ISTAR.get("task_lambdas") or {}).get(task, ISTAR.get("lambdas", []))


def lam_text(lam):
    """How a weight appears in paths: as Python's format(lam, "g") (isoflow.experiment.lambda_dir does the same)."""
    return format(float(lam), "g")


def istar_trajectories():
    """Every run of the sweep: lambda 0 is the plain run (shared with the paper's runs), others under istar<lambda>/."""
    out = []
    for t, m in istar_pairs():
        for lam in istar_lambdas(t):
            sub = "" if float(lam) == 0 else f"istar{lam_text(lam)}/"
            out += [f"{RESULTS}/trajectories/{t}/{m}/{sub}seed{s}.parquet" for s in config["seeds"]]
    return out


def istar_records():
    return [path[: -len(".parquet")] + ".json" for path in istar_trajectories()]


def all_trajectories():
    return sorted(set(trajectories(all_pairs()) + istar_trajectories()))


def all_task_model_pairs():
    return sorted(set(all_pairs() + istar_pairs()))


def all_tasks():
    """Every task the config prepares (fine-tuning needs only the task, no embeddings)."""
    return sorted({t for t, _ in all_task_model_pairs()} | {t for t, _ in finetune_pairs()})


def task_files(pairs):
    return sorted({f"{DATA}/tasks/{t}/meta.json" for t, _ in pairs})


def embedding_files(pairs):
    return sorted({f"{DATA}/embeddings/{m}/{t}/embeddings.npy" for t, m in pairs})


LABEL_CENTRED_EVERY = config.get("label_centred_every", 0)
AGGREGATE = [f"{RESULTS}/aggregate/trajectories.parquet", f"{RESULTS}/aggregate/runs.csv"]
FIGURE_NAMES = ["silhouette", "log_isoscore", "silhouette_vs_isoscore"] + (["label_centred_isoscore"] if LABEL_CENTRED_EVERY else [])
FIGURES = [f"{RESULTS}/figures/{name}.{ext}" for name in FIGURE_NAMES for ext in ("png", "pdf")]


def table_files():
    """What `isoflow tables` writes for this config: per-run correlations always; main-task and GLUE tables if enabled."""
    stems = ["correlations_per_run"]
    if paper_pairs():
        stems += ["correlations", "table1_sizes"]
    if glue_pairs():
        stems += ["correlations_glue", "table2_sizes_glue"]
    if LABEL_CENTRED_EVERY and (paper_pairs() or glue_pairs()):
        stems += ["label_centred"]
    return [f"{RESULTS}/tables/{stem}.{ext}" for stem in stems for ext in ("csv", "md", "tex")]


ISTAR_AGGREGATE = [f"{RESULTS}/aggregate/istar/{name}" for name in ("trajectories.parquet", "runs.csv")]
ISTAR_REPORT = [f"{RESULTS}/tables/istar.{ext}" for ext in ("csv", "md", "tex")] + [
    f"{RESULTS}/figures/{name}.{ext}" for name in ("istar_performance", "istar_curves", "istar_silhouette_vs_isoscore") for ext in ("png", "pdf")
]


def istar_files():
    return ISTAR_REPORT if istar_pairs() and ISTAR.get("lambdas") else []


def main_report_files():
    return table_files() + FIGURES if all_pairs() else []


LAYERS = config.get("layers") or {}


def layer_runs():
    """The output directories' tables of every model (and static vectors) x corpus of the `layers` section."""
    models = LAYERS.get("models", []) + LAYERS.get("static", [])
    return [f"{RESULTS}/layers/{m}/{c}/layers.parquet" for m in models for c in LAYERS.get("corpora", [])]


def layer_run_files():
    """Every file of every analysis: what the report reads."""
    return [p.replace("layers.parquet", name) for p in layer_runs() for name in ("layers.parquet", "pca.parquet", "meta.json")]


LAYERS_REPORT = [f"{RESULTS}/tables/{name}.{ext}" for name in ("layers", "layers_lid") for ext in ("csv", "md", "tex")] + [
    f"{RESULTS}/figures/{name}.{ext}" for name in ("layers_similarity", "layers_isoscore", "layers_lid", "layers_pca") for ext in ("png", "pdf")
]


def layers_files():
    return LAYERS_REPORT if layer_runs() else []


FINETUNE = config.get("finetune") or {}


def finetune_pairs():
    return [(t, m) for t in FINETUNE.get("tasks", []) for m in FINETUNE.get("models", [])]


def finetune_records():
    return [f"{RESULTS}/finetune/{t}/{m}/istar{lam_text(lam)}/seed{s}.json" for t, m in finetune_pairs()
            for lam in FINETUNE.get("lambdas", []) for s in FINETUNE.get("seeds", [])]


def finetune_run_files():
    return [r[: -len(".json")] + suffix for r in finetune_records() for suffix in (".json", ".parquet")]


FINETUNE_REPORT = [f"{RESULTS}/tables/finetune.{ext}" for ext in ("csv", "md", "tex")] + [
    f"{RESULTS}/figures/{name}.{ext}" for name in ("finetune_performance", "finetune_twonn", "finetune_silhouette_vs_isoscore")
    for ext in ("png", "pdf")
]


def finetune_files():
    return FINETUNE_REPORT if finetune_records() else []


def report_files():
    """Every table and figure: the default target `all` and its alias `report`."""
    return main_report_files() + istar_files() + layers_files() + finetune_files()


# The HTML report (`snakemake --report results/report.html`): every figure (PNG) and table (CSV) with a caption
# (report/*.rst: what is shown, from which runs, the paper's value) in a category.
CAPTIONS = {"istar": "istar_table", "layers": "layers_table", "layers_lid": "layers_lid_table", "finetune": "finetune_table"}


def reported(paths, category):
    out = []
    for path in paths:
        stem, ext = os.path.splitext(os.path.basename(path))
        if ext in (".png", ".csv"):
            where = "GLUE (Appendix A)" if "glue" in stem else category
            out.append(report(path, caption=f"../report/{CAPTIONS.get(stem, stem)}.rst", category=where))
        else:
            out.append(path)
    return out
