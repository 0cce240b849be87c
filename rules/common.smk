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

from isoflow import layout
from isoflow.checkpoints import pretrained_runs
from isoflow.datasets import WORD_TASKS
from isoflow.finetune import runs as finetune_runs
from isoflow.finetune.settings import FinetuneSettings
from isoflow.finetune.settings import report_outputs as finetune_report_outputs
from isoflow.finetune.settings import weight_option
from isoflow.layers import CROSS_FILES, LAYER_FILES, LayerSettings
from isoflow.layers import REPORT_FIGURES as LAYERS_REPORT_FIGURES
from isoflow.layers import REPORT_TABLES as LAYERS_REPORT_TABLES
from isoflow.models import STATIC_MODELS
from isoflow.models.resolve import input_files as model_input_files
from isoflow.models.hub import cached_folder
from isoflow.models.shapes import PUBLISHED, folder_shape
from isoflow.optimize import runs as optimize_runs
from isoflow.optimize.settings import Settings as OptimizeSettings
from isoflow.optimize.settings import istar_report_outputs
from isoflow.optimize.settings import report_outputs as optimize_report_outputs
from isoflow.pretrain.settings import REPORT_FIGURES as PRETRAIN_REPORT_FIGURES
from isoflow.pretrain.settings import REPORT_TABLES as PRETRAIN_REPORT_TABLES
from isoflow.pretrain.settings import CorpusSettings, PretrainSettings
from isoflow.pretrain.corpus import BUILT_IN_SOURCES
from isoflow.sections import SECTIONS
from isoflow.settings import command_line, from_values
from isoflow.stability import REPORT_FIGURES as STABILITY_REPORT_FIGURES
from isoflow.stability import REPORT_TABLES as STABILITY_REPORT_TABLES
from isoflow.stability import StabilitySettings

DATA = config["data_dir"]  # every default: the schema's (rules/config.smk filled them in)
RAW = config.get("raw_dir") or os.path.join(DATA, "raw")
RESULTS = config["results_dir"]
DEVICE = config["device"]
MIRROR = f"--mirror {config['mirror']}" if config.get("mirror") else ""
# Word vectors whose vocabulary (and frequency order, hence a word task's word list) is another model's.
VOCABULARY = {name: m.vocabulary for name, m in STATIC_MODELS.items() if m.vocabulary}
GROUP_SEEDS = config["optimize"]["group_seeds"]


# What a value may look like in a path: isoflow.layout's, with the paths it spells (a run's path reads back as its values).
wildcard_constraints:
    **layout.WILDCARDS,


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
# The dtype an own Hugging Face model's weights load in, where the config names one (own.models.<name>.dtype)
MODEL_DTYPES = {
    name: entry["dtype"] for name, entry in (OWN.get("models") or {}).items() if entry.get("dtype", "auto") != "auto"
}
# The states an own model's layer runs measure, and how they spread its weights over devices, where the config says
# (own.models.<name>.layers, .device_map)
MODEL_LAYERS = {name: entry["layers"] for name, entry in (OWN.get("models") or {}).items() if "layers" in entry}
MODEL_DEVICE_MAPS = {
    name: entry["device_map"] for name, entry in (OWN.get("models") or {}).items() if "device_map" in entry
}
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
PRETRAINED = pretrained_runs(PRETRAIN)


def pretrained_folder(name):
    return f"{DATA}/pretrained/{name}"


MODEL_FOLDERS.update({name: {"path": pretrained_folder(name)} for name in PRETRAINED})


def names_regex(names):
    """A wildcard constraint matching exactly these names (nothing when there are none)."""
    return "(?:" + "|".join(sorted(map(re.escape, names))) + ")" if names else "(?!)"


def own_task_file(wildcards):
    entry = OWN_TASKS.get(wildcards.task)
    return [entry["file"]] if entry else []


def model_files(wildcards):
    return files_of_model(wildcards.model)


def files_of_model(model):
    """An own model folder's weight files (its config.json while the folder is not there yet), or a GGUF file."""
    if model in PRETRAINED:  # the pretraining job's output folder
        return [pretrained_folder(model)]
    entry = MODEL_FOLDERS.get(model)
    if not entry:
        return []
    return model_input_files(entry["path"])


def model_shape(model):
    """What a job's resources are planned from (isoflow.layers.plan), before the model is loaded: a built-in model's
    published shape, a pretraining run's from its settings, an own folder's or a cached hub id's from its config and
    safetensors headers; None where nothing says it yet (a hub id not in the cache)."""
    if model in PUBLISHED:
        return PUBLISHED[model]
    if model in HUB_MODELS:
        folder = cached_folder(HUB_MODELS[model])
        return folder_shape(folder) if folder is not None else None
    if model in PRETRAINED:
        return from_values(PretrainSettings, PRETRAINED[model]).model_shape()
    entry = MODEL_FOLDERS.get(model)
    return folder_shape(entry["path"]) if entry and os.path.isdir(entry["path"]) else None


def model_option(wildcards):
    return option_of_model(wildcards.model)


def option_of_model(model, flag="model", name=None):
    """`--model NAME`, or an own folder's `--model PATH --model-name NAME` (outputs named by the config, not the path),
    with `--dtype` where the config names one; ``flag``: the option's name (`--other`, `--other-name`,
    `--other-dtype` for a command's second model); ``name``: another name for the outputs (a checkpoint's)."""
    option = "--dtype" if flag == "model" else f"--{flag}-dtype"
    dtype = f" {option} {MODEL_DTYPES[model]}" if model in MODEL_DTYPES else ""
    if model in HUB_MODELS:
        return f"--{flag} {HUB_MODELS[model]} --{flag}-name {name or model}{dtype}"
    entry = MODEL_FOLDERS.get(model)
    if not entry:
        return f"--{flag} {model}" + (f" --{flag}-name {name}" if name else "")
    return f"--{flag} {shlex.quote(entry['path'])} --{flag}-name {name or model}{dtype}"


# What every job that loads a model is given: where raw files are cached and mirrored, and the model's option.
MODEL_PARAMS = dict(raw=RAW, mirror=MIRROR, model=model_option)


def pooling_option(wildcards):
    entry = MODEL_FOLDERS.get(wildcards.model)
    return f"--pooling {entry['pooling']}" if entry and entry.get("pooling") else ""


def own_vectors_file(wildcards):
    return OWN_VECTORS[wildcards.model][wildcards.task]


def corpus_files(wildcards):
    return [OWN_CORPORA[wildcards.corpus]] if wildcards.corpus in OWN_CORPORA else []


def corpus_option(wildcards):
    return shlex.quote(OWN_CORPORA.get(wildcards.corpus, wildcards.corpus))


def steps_for(wildcards):
    return OPTIMIZE["steps"]["glue" if wildcards.task.startswith("glue/") else "default"]


def gpus_for(wildcards):
    return 0 if wildcards.model in STATIC_MODELS else 1


def records_of(trajectories):
    """The JSON records of runs (written last: a run is complete when its record exists)."""
    return [path[: -len(".parquet")] + ".json" for path in trajectories]


def embedding_files(pairs):
    return sorted({f"{DATA}/embeddings/{m}/{t}/embeddings.npy" for t, m in pairs})


# ----- Each section's config (its functions and outputs: rules/<section>.smk) -----------------------------------

OPTIMIZE = config["optimize"]  # always there: the schema's defaults (no pairs: nothing to run)
ISTAR = config.get("istar") or {}
LAYERS = config.get("layers") or {}
FINETUNE = config.get("finetune") or {}
STABILITY = config.get("stability") or {}


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
