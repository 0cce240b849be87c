# Config checks before anything is planned: complete files (nothing inherited), then the JSON schema.

import os

import yaml
from snakemake.utils import validate

SCHEMA = os.path.join(workflow.basedir, "schemas", "config.schema.yaml")
with open(SCHEMA) as fh:
    _SCHEMA = yaml.safe_load(fh)
REQUIRED_KEYS = _SCHEMA["required"]
BOOLEAN_KEYS = [k for k, v in _SCHEMA["properties"].items() if v.get("type") == "boolean"]


def check_complete(config, files):
    """A config file given with --configfile must name every required key itself."""
    missing = [key for key in REQUIRED_KEYS if key not in config]
    if missing:
        raise WorkflowError(
            f"{', '.join(map(str, files))}: missing key(s) {', '.join(missing)}. A config file given with --configfile "
            "is used on its own (not merged into config.yaml): start from a copy of config.yaml or "
            "config/offline.yaml and edit it (an empty list disables a section, e.g. `paper: []`)."
        )


def numbers_from_command_line(config):
    """`--config seeds=[0,1]` or `group_seeds=false` gives strings (Snakemake parses values with YAML's BaseLoader):
    make them numbers and booleans."""

    def number(value):
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                try:
                    return float(value)
                except ValueError:
                    return value
        return value

    for key in BOOLEAN_KEYS:
        if isinstance(config.get(key), str) and config[key].lower() in ("true", "false"):
            config[key] = config[key].lower() == "true"
    if isinstance(config.get("seeds"), list):
        config["seeds"] = [number(v) for v in config["seeds"]]
    for name in ("istar", "finetune", "layers", "stability"):
        section = config.get(name)
        if isinstance(section, dict):
            for key, value in section.items():
                if isinstance(value, dict):  # istar.task_lambdas: task -> weights
                    section[key] = {
                        k: [number(v) for v in vs] if isinstance(vs, list) else number(vs) for k, vs in value.items()
                    }
                else:
                    section[key] = (
                        [number(v) for v in value]
                        if isinstance(value, list) and key in ("lambdas", "seeds", "cosreg")
                        else ([number(v) for v in value] if isinstance(value, list) else number(value))
                    )


def check_task_lambdas(config):
    """istar.task_lambdas may only name tasks of the sweep (the schema checks each name and its weights)."""
    istar = config.get("istar") or {}
    unknown = sorted(set(istar.get("task_lambdas") or {}) - set(istar.get("tasks", [])))
    if unknown:
        raise WorkflowError(
            f"config: istar.task_lambdas names {', '.join(unknown)}, not in istar.tasks {istar.get('tasks', [])}; "
            "add the task to istar.tasks or remove its entry from istar.task_lambdas"
        )


def check_own_names(config):
    """Every task, model and corpus a section names is a built-in one or declared under `own` (the schema checks only
    the spelling); an own name never shadows a built-in one; vectors made elsewhere are never fine-tuned or analysed
    across layers. (That they come with a file for every task they are paired with: common.smk, where the pairs are.)"""
    from isoflow.corpora import CORPORA
    from isoflow.datasets import DATASETS, WORD_TASKS
    from isoflow.models import MODELS, SENTENCE_MODELS

    own = config.get("own") or {}
    tasks, models, corpora = (own.get(k) or {} for k in ("tasks", "models", "corpora"))
    pretrained = (config.get("pretrain") or {}).get("models") or {}
    for kind, names, builtin in (("tasks", tasks, DATASETS), ("models", models, MODELS), ("corpora", corpora, CORPORA)):
        taken = sorted(set(names) & set(builtin))
        if taken:
            raise WorkflowError(
                f"config: own.{kind}.{taken[0]} is the name of a built-in one; rename it (e.g. my-{taken[0]})"
            )
    for name in sorted(pretrained):
        if name in MODELS or name in models:
            where = "a built-in model" if name in MODELS else f"own.models.{name}"
            raise WorkflowError(
                f"config: pretrain.models.{name} has the name of {where}; rename one of them (e.g. plain-{name})"
            )
    vectors = {m: set(entry["embeddings"]) for m, entry in models.items() if "embeddings" in entry}
    encoders = {m for m, entry in models.items() if "path" in entry or "hub" in entry} | set(pretrained)
    models = {**models, **pretrained}

    def check(field, values, allowed, hint):
        for value in values:
            if value not in allowed:
                raise WorkflowError(
                    f"config: {field} names {value!r}, which is neither {hint} nor declared under own; add it to own or fix the name"
                )

    sentence_tasks = [t for t in DATASETS if t not in WORD_TASKS]
    paper, istar, finetune, layers = (config.get(k) or {} for k in ("paper", "istar", "finetune", "layers"))
    check("paper[].task", [e["task"] for e in config.get("paper", [])], [*DATASETS, *tasks], "a built-in task")
    check("paper[].model", [e["model"] for e in config.get("paper", [])], [*MODELS, *models], "a built-in model")
    check("glue.models", config["glue"]["models"], [*SENTENCE_MODELS, *models], "a sentence encoder")
    check("istar.tasks", istar.get("tasks", []), [*DATASETS, *tasks], "a built-in task")
    check("istar.models", istar.get("models", []), [*MODELS, *models], "a built-in model")
    for field, names in (("finetune.models", finetune.get("models", [])), ("layers.models", layers.get("models", []))):
        for model in names:
            if model in vectors:
                raise WorkflowError(
                    f"config: {field} names {model!r}, vectors made elsewhere (no encoder to run); give a model folder "
                    f"instead (own.models.{model}.path)"
                )
    check("finetune.tasks", finetune.get("tasks", []), [*sentence_tasks, *tasks], "a built-in sentence task")
    check(
        "finetune.models",
        finetune.get("models", []),
        [*SENTENCE_MODELS, *encoders],
        "a sentence encoder or an own model folder",
    )
    check("layers.corpora", layers.get("corpora", []), [*CORPORA, *corpora], "a built-in corpus")
    excluded = ((config.get("pretrain") or {}).get("corpus") or {}).get("exclude_tasks", [])
    check("pretrain.corpus.exclude_tasks", excluded, [*sentence_tasks, *tasks], "a built-in sentence task")


check_complete(config, workflow.overwrite_configfiles or ["config.yaml"])
numbers_from_command_line(config)


validate(config, SCHEMA)
check_task_lambdas(config)
check_own_names(config)
