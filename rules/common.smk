# Helpers of the workflow, kept apart from its rules (Snakemake's linter asks for that). Paths and options from the
# validated config; facts read from the package (never copied here); each section's file lists, under the name of the
# .smk file whose rules use them.
#
# Inputs are plain (no ancient()): a job re-runs when an input is newer than its outputs (and, where this Snakemake
# recorded the input's checksum, differs from it: touching alone is not a change), and everything downstream of a job
# that runs re-runs too. `dvc pull`/`dvc checkout` write files in arbitrary order, so their mtimes say nothing:
# after a pull, `snakemake --touch` (what `make pull` does) restores their order without re-running anything; see
# docs/workflow.md. DVC's own stages restrict Snakemake to their rules (--allowed-rules), so `dvc repro` never re-runs
# another stage's jobs because of such mtimes.

import os
import re
import shlex
import sys
from pathlib import Path

from isoflow.datasets import WORD_TASKS
from isoflow.finetune.settings import FinetuneSettings
from isoflow.layers import LAYER_FILES, LayerSettings
from isoflow.models import STATIC_MODELS
from isoflow.models.local import weight_files
from isoflow.optimize.settings import Settings as OptimizeSettings
from isoflow.optimize.settings import head_dir
from isoflow.pretrain.settings import CorpusSettings
from isoflow.records import lambda_dir
from isoflow.sections import SECTIONS
from isoflow.settings import command_line
from isoflow.stability import StabilitySettings

DATA = config.get("data_dir", "data")
RAW = config.get("raw_dir") or os.path.join(DATA, "raw")
RESULTS = config.get("results_dir", "results")
DEVICE = config.get("device", "auto")
MIRROR = f"--mirror {config['mirror']}" if config.get("mirror") else ""
# Word vectors whose vocabulary (and frequency order, hence a word task's word list) is another model's.
VOCABULARY = {name: m.vocabulary for name, m in STATIC_MODELS.items() if m.vocabulary}
GROUP_SEEDS = config.get("group_seeds", False)


wildcard_constraints:
    task=r"[a-z0-9-]+(/[a-z0-9]+)?",
    model=r"(?!istar)[a-z0-9-]+",  # never the istar<lambda> directory of I-STAR runs
    seed=r"\d+",
    lam=r"-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?",
    lr=r"[0-9]+(\.[0-9]+)?(e-?[0-9]+)?",
    reg=r"istar|cosreg",
    corpus=r"[a-z0-9-]+",
    pretrained=r"[a-z0-9-]+",


# ----- Your own data, models (or vectors made elsewhere) and corpora: the `own` section -------------------------
# Their files are declared inputs: edit the CSV, replace the weights or the vectors, and the jobs that read them re-run.

OWN = config.get("own") or {}
home = os.path.expanduser  # ~/models/my-bert works in the config as on the command line
OWN_TASKS = {name: {**entry, "file": home(entry["file"])} for name, entry in (OWN.get("tasks") or {}).items()}
MODEL_FOLDERS = {
    name: {**entry, "path": home(entry["path"])} for name, entry in (OWN.get("models") or {}).items() if "path" in entry
}
# Hugging Face hub ids: loaded from the Hugging Face cache (offline) or downloaded by the job; no file to declare.
HUB_MODELS = {name: entry["hub"] for name, entry in (OWN.get("models") or {}).items() if "hub" in entry}
OWN_VECTORS = {
    name: {task: home(path) for task, path in entry["embeddings"].items()}
    for name, entry in (OWN.get("models") or {}).items()
    if "embeddings" in entry
}
OWN_CORPORA = {name: home(path) for name, path in (OWN.get("corpora") or {}).items()}


# ----- Sections: each writes under <results_dir>/<name>/ (runs/, tables/, figures/; isoflow.sections) ----------


def section_dir(name):
    return f"{RESULTS}/{SECTIONS[name].name}"


def tables_of(name, stems):
    return [f"{section_dir(name)}/tables/{stem}.{ext}" for stem in stems for ext in ("csv", "md", "tex")]


def figures_of(name, stems):
    return [f"{section_dir(name)}/figures/{stem}.{ext}" for stem in stems for ext in ("png", "pdf")]


def kept(outputs):
    """A job's outputs, kept until the job that remakes them succeeds: Snakemake backs them up before the job runs and
    puts them back if it fails (its `update` flag), instead of deleting them first. A failed re-run (a bad edit of an
    own file, an interrupted job) never removes good results; isoflow itself replaces them only once complete."""
    return update(outputs)


def reported(paths, name):
    """The section's tables (CSV) and figures (PNG) in the HTML report, under the section's title (the GLUE rows of the
    optimize section in a category of their own), with a caption each: report/<stem>_table.rst for a table,
    report/<stem>.rst for a figure."""
    out = []
    for path in paths:
        stem, ext = os.path.splitext(os.path.basename(path))
        if ext in (".png", ".csv"):
            # the category is a reST link target: a colon in it would end the target's name
            where = f"{SECTIONS[name].title}, GLUE (Appendix A)" if "glue" in stem else SECTIONS[name].title
            caption = (
                f"../report/{stem}_table.rst" if ext == ".csv" else f"../report/{stem}.rst"
            )  # a table and a figure may share a stem
            out.append(report(path, caption=caption, category=where))
        else:
            out.append(path)
    return out


# ----- Plain language models of our own (pretrain.smk): every other section uses them like own model folders ---

PRETRAIN = config.get("pretrain") or {}
PRETRAIN_CORPUS = f"{DATA}/pretrain/corpus"
PRETRAINED = {
    name: {**(PRETRAIN.get("training") or {}), **entry} for name, entry in (PRETRAIN.get("models") or {}).items()
}
PRETRAIN_TABLES = tables_of("pretrain", ["pretrain"])
PRETRAIN_FIGURES = figures_of("pretrain", ["pretrain_curves"])
PRETRAIN_REPORT = PRETRAIN_TABLES + PRETRAIN_FIGURES


def pretrained_folder(name):
    return f"{DATA}/pretrained/{name}"


MODEL_FOLDERS.update({name: {"path": pretrained_folder(name)} for name in PRETRAINED})


def pretrain_options(wildcards):
    """The model's settings (the section's shared `training` ones, overridden by its own entry) as options."""
    return " ".join(f"--{key.replace('_', '-')} {value}" for key, value in PRETRAINED[wildcards.pretrained].items())


PRETRAIN_SOURCES = [
    s if s in ("brown", "wordnet") else home(s)
    for s in (PRETRAIN.get("corpus") or {}).get("sources", ["brown", "wordnet"])
]


def pretrain_excluded():
    """The tasks kept out of the corpus: built-in ones by name, own ones by their prepared folder."""
    return [
        f"{DATA}/tasks/{t}" if t in OWN_TASKS else t for t in (PRETRAIN.get("corpus") or {}).get("exclude_tasks", [])
    ]


def pretrain_corpus_inputs(wildcards):
    """Text files among the sources, and the own tasks whose text is excluded."""
    own = [f"{path}/meta.json" for path in pretrain_excluded() if path.startswith(f"{DATA}/tasks/")]
    return [s for s in PRETRAIN_SOURCES if s not in ("brown", "wordnet")] + own


def pretrain_corpus_options(wildcards):
    corpus = PRETRAIN.get("corpus") or {}
    sources = " ".join(f"--source {shlex.quote(s)}" for s in PRETRAIN_SOURCES)
    excluded = " ".join(f"--exclude-task {shlex.quote(t)}" for t in pretrain_excluded())
    settings = command_line(CorpusSettings, corpus)
    return " ".join(part for part in (sources, excluded, settings) if part)


def pretrain_files():
    return PRETRAIN_REPORT if PRETRAINED else []


def names_regex(names):
    """A wildcard constraint matching exactly these names (nothing when there are none)."""
    return "(?:" + "|".join(sorted(map(re.escape, names))) + ")" if names else "(?!)"


def own_task_file(wildcards):
    entry = OWN_TASKS.get(wildcards.task)
    return [entry["file"]] if entry else []


def model_files(wildcards):
    """An own model folder's weight files (its config.json while the folder is not there yet), or a GGUF file."""
    if wildcards.model in PRETRAINED:  # the pretraining job's output folder
        return [pretrained_folder(wildcards.model)]
    entry = MODEL_FOLDERS.get(wildcards.model)
    if not entry:
        return []
    folder = Path(entry["path"])
    if folder.suffix.lower() == ".gguf":  # a GGUF file: the file itself (de-quantised by the job, once)
        return [str(folder)]
    found = weight_files(folder) if folder.is_dir() else []
    return sorted(str(p) for p in found) or [str(folder / "config.json")]


def model_option(wildcards):
    """`--model NAME`, or an own folder's `--model PATH --model-name NAME` (outputs named by the config, not the path)."""
    if wildcards.model in HUB_MODELS:
        return f"--model {HUB_MODELS[wildcards.model]} --model-name {wildcards.model}"
    entry = MODEL_FOLDERS.get(wildcards.model)
    if not entry:
        return f"--model {wildcards.model}"
    return f"--model {shlex.quote(entry['path'])} --model-name {wildcards.model}"


def pooling_option(wildcards):
    entry = MODEL_FOLDERS.get(wildcards.model)
    return f"--pooling {entry['pooling']}" if entry and entry.get("pooling") else ""


def own_vectors_file(wildcards):
    return OWN_VECTORS[wildcards.model][wildcards.task]


def corpus_files(wildcards):
    return [OWN_CORPORA[wildcards.corpus]] if wildcards.corpus in OWN_CORPORA else []


def corpus_option(wildcards):
    return shlex.quote(OWN_CORPORA.get(wildcards.corpus, wildcards.corpus))


def vocab_of(task):
    """A word task's words come from its (single) static model's vocabulary."""
    models = sorted({m for t, m in paper_pairs() + istar_pairs() if t == task})
    vocabularies = sorted({VOCABULARY.get(m, m) for m in models})
    if len(vocabularies) != 1 or not set(models) <= set(STATIC_MODELS):
        raise ValueError(
            f"config: word task {task} needs static models that share one vocabulary (glove-50d and its encoded "
            f"words, or word2vec-222); got {models}"
        )
    return vocabularies[0]


def prepare_options(wildcards):
    """A word task's vocabulary, or an own task's file and columns (`isoflow prepare NAME --from-file`)."""
    entry = OWN_TASKS.get(wildcards.task)
    if entry:
        columns = {
            "from-file": entry["file"],
            "text": entry["text"],
            "text-b": entry.get("text_b"),
            "label": entry["label"],
            "label-sep": entry.get("label_sep"),
        }
        return " ".join(f"--{k} {shlex.quote(v)}" for k, v in columns.items() if v is not None)
    return f"--vocab {vocab_of(wildcards.task)}" if wildcards.task in WORD_TASKS else ""


def steps_for(wildcards):
    return config["steps"]["glue" if wildcards.task.startswith("glue/") else "default"]


def gpus_for(wildcards):
    return 0 if wildcards.model in STATIC_MODELS else 1


def records_of(trajectories):
    """The JSON records of runs (written last: a run is complete when its record exists)."""
    return [path[: -len(".parquet")] + ".json" for path in trajectories]


def embedding_files(pairs):
    return sorted({f"{DATA}/embeddings/{m}/{t}/embeddings.npy" for t, m in pairs})


# The classifier of the optimize and istar sections' runs: the paper's linear layer, or a non-linear head whose runs go
# one folder deeper (isoflow.optimize.settings.head_dir), so that they never replace the linear head's.
HEAD_DIR = head_dir(config.get("head", "linear"), config.get("head_layers", 1))


def under_model(model_dir):
    """Where a run of this config's head goes below its model's folder."""
    return f"{model_dir}/{HEAD_DIR}" if HEAD_DIR else model_dir


# ----- The optimize section: Mickus et al.'s main tasks (config `paper`) and GLUE (`glue`) (optimize.smk) -------


def paper_pairs():
    return [(e["task"], e["model"]) for e in config["paper"]]


def glue_pairs():
    return [(f"glue/{t}", m) for t in config["glue"]["tasks"] for m in config["glue"]["models"]]


def all_pairs():
    return paper_pairs() + glue_pairs()


def run_dir(section, task, model):
    """A task x model's runs of the optimize or istar section, below the model's folder for this config's head."""
    return under_model(f"{section_dir(section)}/runs/{task}/{model}")


def trajectories(pairs):
    return [f"{run_dir('optimize', t, m)}/seed{s}.parquet" for t, m in pairs for s in config["seeds"]]


LABEL_CENTRED_EVERY = config.get("label_centred_every", 0)
OPTIMIZE_AGGREGATE = [f"{section_dir('optimize')}/aggregate/{name}" for name in ("trajectories.parquet", "runs.csv")]
OPTIMIZE_FIGURES = figures_of(
    "optimize",
    ["silhouette", "log_isoscore", "silhouette_vs_isoscore"]
    + (["label_centred_isoscore"] if LABEL_CENTRED_EVERY else []),
)


def optimize_tables():
    """What `isoflow optimize-report` writes for this config: per-run correlations always; main-task and GLUE tables
    if enabled; the seeds' spread with two seeds or more."""
    stems = ["correlations_per_run"] + (["seed_spread"] if len(config["seeds"]) > 1 else [])
    if paper_pairs():
        stems += ["correlations", "table1_sizes"]
    if glue_pairs():
        stems += ["correlations_glue", "table2_sizes_glue"]
    if LABEL_CENTRED_EVERY and all_pairs():
        stems += ["label_centred"]
    return tables_of("optimize", stems)


def optimize_files():
    return optimize_tables() + OPTIMIZE_FIGURES if all_pairs() else []


# ----- The I-STAR sweep (istar.smk) ---------------------------------------------------------------------------

ISTAR = config.get("istar") or {}
# The sweep's own seeds (a subset of the config's: its lambda = 0 runs are the optimize section's), else the config's.
ISTAR_SEEDS = ISTAR.get("seeds") or config["seeds"]


def istar_pairs():
    return [(t, m) for t in ISTAR.get("tasks", []) for m in ISTAR.get("models", [])]


def istar_lambdas(task):
    """The sweep's weights for one task: istar.task_lambdas[task] where given, else istar.lambdas."""
    return (ISTAR.get("task_lambdas") or {}).get(task, ISTAR.get("lambdas", []))


def istar_trajectories():
    """Every run of the sweep: lambda 0 is the plain run (shared with the paper's runs), others under istar<lambda>/."""
    out = []
    for t, m in istar_pairs():
        for lam in istar_lambdas(t):
            sub = "" if float(lam) == 0 else f"{lambda_dir(float(lam))}/"
            where = f"{run_dir('istar', t, m)}/{sub}" if sub else f"{run_dir('optimize', t, m)}/"
            out += [f"{where}seed{s}.parquet" for s in ISTAR_SEEDS]
    return out


ISTAR_AGGREGATE = [f"{section_dir('istar')}/aggregate/{name}" for name in ("trajectories.parquet", "runs.csv")]
# A baseline sweep to compare with (istar.baseline: a runs.csv, e.g. docs/results/istar/runs.csv, the linear head's):
# its runs aggregated beside this sweep's, and the table and figure istar_heads.
ISTAR_BASELINE = ISTAR.get("baseline")
ISTAR_BASELINE_AGGREGATE = [
    f"{section_dir('istar')}/aggregate/baseline/{f}" for f in ("trajectories.parquet", "runs.csv")
]
_HEADS = ["istar_heads"] if ISTAR_BASELINE else []
ISTAR_TABLES = tables_of("istar", ["istar", *_HEADS])
ISTAR_FIGURES = figures_of("istar", ["istar_performance", "istar_curves", "istar_silhouette_vs_isoscore", *_HEADS])
ISTAR_REPORT = ISTAR_TABLES + ISTAR_FIGURES


def baseline_records():
    """The baseline sweep's run records (.json and .parquet), as its runs.csv lists them."""
    import csv

    if not ISTAR_BASELINE:
        return []
    with open(ISTAR_BASELINE, newline="", encoding="utf-8") as fh:
        stems = [re.sub(r"\.(json|parquet)$", "", row["record"]) for row in csv.DictReader(fh)]
    return [f"{stem}{suffix}" for stem in stems for suffix in (".json", ".parquet")]


def istar_files():
    return ISTAR_REPORT if istar_pairs() and ISTAR.get("lambdas") else []


# ----- Cai et al. across layers (layers.smk) ------------------------------------------------------------------

LAYERS = config.get("layers") or {}


def layer_runs():
    """The output directories' tables of every model (and static vectors) x corpus of the `layers` section."""
    models = LAYERS.get("models", []) + LAYERS.get("static", [])
    return [f"{section_dir('layers')}/runs/{m}/{c}/layers.parquet" for m in models for c in LAYERS.get("corpora", [])]


def layer_run_files():
    """Every file of every analysis: what the report reads."""
    return [p.replace("layers.parquet", name) for p in layer_runs() for name in LAYER_FILES if name != "layers.csv"]


LAYERS_TABLES = tables_of(
    "layers", ["layers", "layers_lid", "layers_kmeans", "layers_clusters", "layers_orderings", "layers_outliers"]
)
LAYERS_FIGURES = figures_of(
    "layers",
    [
        "layers_similarity",
        "layers_isoscore",
        "layers_lid",
        "layers_kmeans",
        "layers_orderings",
        "layers_pca",
        "layers_roll",
        "layers_outliers",
    ],
)
LAYERS_REPORT = LAYERS_TABLES + LAYERS_FIGURES


def layers_files():
    return LAYERS_REPORT if layer_runs() else []


# ----- Fine-tuning with I-STAR (finetune.smk) -----------------------------------------------------------------

FINETUNE = config.get("finetune") or {}


def finetune_options(wildcards):
    """The section's settings as `isoflow finetune` options (isoflow.finetune.settings declares them and their defaults,
    which the schema filled in); CosReg runs take cosreg_points."""
    values = {**FINETUNE, "points": FINETUNE["cosreg_points"] if wildcards.reg == "cosreg" else FINETUNE["points"]}
    return command_line(FinetuneSettings, values)


def finetune_pairs():
    return [(t, m) for t in FINETUNE.get("tasks", []) for m in FINETUNE.get("models", [])]


def finetune_records():
    """Every run: istar<lambda> for each I-STAR weight (0: the plain run), cosreg<w> for each non-zero CosReg weight."""
    runs = [lambda_dir(float(lam)) for lam in FINETUNE.get("lambdas", [])]
    runs += [f"cosreg{float(w):g}" for w in FINETUNE.get("cosreg", []) if float(w) != 0]
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


def finetune_run_files():
    runs = [r[: -len(".json")] + suffix for r in finetune_records() for suffix in (".json", ".parquet")]
    return runs + finetune_baselines()


# Runs measured per layer (layer_geometry) add finetune_layers and finetune_layers_epochs, each a table and a figure.
_FINETUNE_LAYERS = ["finetune_layers", "finetune_layers_epochs"] if FINETUNE.get("layer_geometry") else []
FINETUNE_TABLES = tables_of("finetune", ["finetune", "finetune_controls", "finetune_paired", *_FINETUNE_LAYERS])
FINETUNE_FIGURES = figures_of(
    "finetune",
    [
        "finetune_performance",
        "finetune_twonn",
        "finetune_silhouette_vs_isoscore",
        "finetune_baselines",
        "finetune_activations",
        "finetune_epochs",
        *_FINETUNE_LAYERS,
    ],
)
FINETUNE_REPORT = FINETUNE_TABLES + FINETUNE_FIGURES


def finetune_files():
    return FINETUNE_REPORT if finetune_records() else []


# ----- IsoScore* on mini-batches (stability.smk) --------------------------------------------------------------

STABILITY = config.get("stability") or {}
STABILITY_TABLES = tables_of("stability", ["stability"])
STABILITY_FIGURES = figures_of("stability", ["stability"])
STABILITY_RUNS = [f"{section_dir('stability')}/runs/{name}" for name in ("runs.parquet", "meta.json")]


def stability_files():
    return STABILITY_TABLES + STABILITY_FIGURES + STABILITY_RUNS if STABILITY else []


def stability_options(wildcards):
    """The section's keys as `isoflow stability` options (isoflow.stability.StabilitySettings declares them)."""
    return command_line(StabilitySettings, STABILITY)


# ----- Optimisation runs (grouped or one per seed) (optimize.smk) ---------------------------------------------


def run_files(stem_dir, suffix, seeds=None):
    """A job's outputs: every seed's file when seeds are grouped, else the one seed's."""
    if GROUP_SEEDS:
        return [f"{stem_dir}/seed{s}{suffix}" for s in seeds or config["seeds"]]
    return f"{stem_dir}/seed{{seed}}{suffix}"


def seed_option(wildcards, output):
    """--seeds S,S,... and an --out holding {seed} (grouped), or --seed S and the run's own --out."""
    first = output.parquet if isinstance(output.parquet, str) else output.parquet[0]
    if GROUP_SEEDS:  # the job's seeds: those of its outputs (the section's seeds)
        seeds = ",".join(re.search(r"seed(\d+)\.parquet$", p).group(1) for p in output.parquet)
        return f"--seeds {seeds} --out '{os.path.dirname(first)}/seed{{seed}}'"
    return f"--seed {wildcards.seed} --out {first[: -len('.parquet')]}"


RUN_LOG = "seeds" if GROUP_SEEDS else "seed{seed}"
OPTIMIZE_PARAMS = dict(
    task_dir=lambda wildcards, input: os.path.dirname(input.task),
    embeddings=lambda wildcards, input: os.path.dirname(input.embeddings),
    device=DEVICE,
    steps=steps_for,
    # The run's settings the config declares (the schema filled in their defaults): optimize.settings.Settings'.
    settings=command_line(OptimizeSettings, {**config, **({"zeta": ISTAR["zeta"]} if "zeta" in ISTAR else {})}),
    seeds=seed_option,
)


# ----- Across sections (targets.smk) --------------------------------------------------------------------------


def all_task_model_pairs():
    return sorted(set(all_pairs() + istar_pairs()))


def check_vectors_cover_their_tasks():
    """Vectors made elsewhere come with a file for every task they are paired with (config.smk checked the names)."""
    for task, model in all_task_model_pairs():
        if model in OWN_VECTORS and task not in OWN_VECTORS[model]:
            refuse(
                f"own.models.{model}.embeddings has no file for task {task!r}; add `{task}: FILE` (one row per item of the task)"
            )


check_vectors_cover_their_tasks()
check_own_files(config)  # config.smk: last, once every name is known to be right


def all_tasks():
    """Every task the config prepares (fine-tuning needs only the task, no embeddings)."""
    return sorted({t for t, _ in all_task_model_pairs()} | {t for t, _ in finetune_pairs()})


def all_trajectories():
    return sorted(set(trajectories(all_pairs()) + istar_trajectories()))


def report_files():
    """Every table and figure: the default target `all` and its alias `report`; each section's `<name>_files()` (the
    files its config enables), in the registry's order (isoflow.sections)."""
    return [path for name in SECTIONS for path in globals()[f"{name}_files"]()]


# ----- Failures on the terminal ----------------------------------------------------------------------------------


def run_log_text(snakemake_log):
    """Snakemake's log of this run (onerror and onsuccess are given its path, or a list of paths)."""
    logs = [snakemake_log] if isinstance(snakemake_log, (str, os.PathLike)) else list(snakemake_log or [])
    return "".join(Path(f).read_text(errors="replace") for f in logs if Path(f).is_file())


def job_warnings(snakemake_log):
    """isoflow's warnings (silent garbage: unknown words, repeated rows, unmeasurable cells) in the logs of the jobs
    this run started, one line each with its log: they would otherwise stay in logs nobody opens."""
    lines = []
    for job_log in dict.fromkeys(re.findall(r"^    log: (\S+)", run_log_text(snakemake_log), re.M)):
        said = Path(job_log).read_text(errors="replace").splitlines() if Path(job_log).is_file() else []
        lines += [f"{job_log}: {line.strip()}" for line in said if re.match(r"^isoflow [\w-]+: warning:", line)]
    return lines


def report_warnings(snakemake_log):
    lines = job_warnings(snakemake_log)
    if lines:
        print("\nWarnings from this run's jobs:", *lines, sep="\n", file=sys.stderr)


# Snakemake's report of a failed job: a line "Error in", the word for a rule and its name, then indented fields (input,
# output, log, ...); the word is spelled apart so that `snakemake --lint` does not take the pattern for a rule here.
FAILED_BLOCK = re.compile("^Error in {} (\\w+):\n(?:    .*\n?)*".format("rule"), re.M)


def failed_jobs(snakemake_log):
    """The jobs that failed in this run, from Snakemake's log: (rule, inputs, outputs, log) each."""
    text = run_log_text(snakemake_log)
    jobs = []
    for match in FAILED_BLOCK.finditer(text):
        block, name = match.group(0), match.group(1)
        field = lambda key: (re.findall(rf"^    {key}: (.*)$", block, re.M) or [""])[0]  # noqa: E731
        split = lambda value: [re.sub(r" \(.*\)$", "", v.strip()) for v in value.split(", ") if v.strip()]  # noqa: E731
        jobs.append((name, split(field("input")), split(field("output")), field("log").split(" (")[0]))
    return jobs


def isoflow_error(job_log):
    """The clear line isoflow wrote before failing (the file, the field, the fix), else the log's last line."""
    said = Path(job_log).read_text(errors="replace").splitlines() if job_log and Path(job_log).is_file() else []
    errors = [line for line in said if re.match(r"^isoflow [\w-]+: (error|terminated|interrupted)", line)]
    return (errors[-1] if errors else next((line for line in reversed(said) if line.strip()), "no output")).strip()


def report_failures(snakemake_log):
    """Snakemake's onerror. (1) The failed jobs' isoflow errors, last on the terminal, where the user looks. (2) The
    outputs Snakemake put back after a failed job (kept()) carry the time of that restore, and Snakemake records them
    as made from the failed run's inputs: set them just before their inputs and drop that record, so that the next run
    tries the job again instead of taking them for the failed run's results (no stale success)."""
    from snakemake.io import IOFile

    lines = []
    for name, inputs, outputs, job_log in failed_jobs(snakemake_log):
        lines.append(f"{name} failed ({job_log}): {isoflow_error(job_log)}")
        times = [os.path.getmtime(f) for f in inputs if os.path.exists(f)]
        for out in outputs:
            if times and os.path.exists(out):
                os.utime(out, (min(times) - 1, min(times) - 1))
            # Snakemake records a failed job's inputs as those of the restored outputs: forget that record
            workflow.persistence.cleanup_metadata(IOFile(out))
    report_warnings(snakemake_log)
    if lines:
        print("\nWhat failed (the outputs of a failed job are kept as they were):", *lines, sep="\n", file=sys.stderr)


LAST_CONFIG = ".snakemake/isoflow-last-config"  # `make report` reports the config that last ran to the end


def finished(snakemake_log):
    """Snakemake's onsuccess: the jobs' warnings on the terminal; remember which config this finished run used."""
    report_warnings(snakemake_log)
    record_last_config()


def record_last_config():
    """Which config this finished run used (for `make report`)."""
    os.makedirs(os.path.dirname(LAST_CONFIG), exist_ok=True)
    Path(LAST_CONFIG).write_text(f"{CONFIG_FILES}\n")
