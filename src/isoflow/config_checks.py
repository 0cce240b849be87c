"""The workflow config's checks, before anything is planned: its base merged under it, the JSON schema, the names and
the files it declares. Each mistake is one line that starts with the field and says the fix; the workflow
(rules/config.smk) prints each after the config file's name and stops.

The checks run in stages, and a stage's mistakes stop the next stages (a misspelt key would make every later check
say something beside the point): the base chain, the schema, the names (each a built-in one or declared under
``own``), the vectors' files for every task they are paired with, and last the declared files and folders, which must
exist on every run.

>>> schema = load_workflow_schema("schemas/config.schema.yaml")
>>> config = {"optimize": {"pairs": [{"task": "polarity", "model": "minlm"}]}}
>>> try:
...     checked_config(config, schema)
... except ConfigRefused as refused:
...     print(*refused.problems)  # doctest: +ELLIPSIS
optimize.pairs[].model names 'minlm', which is neither a built-in model nor declared under own; ...
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .config_files import ConfigError, resolve
from .config_schema import RENAMED_KEYS, fill_defaults
from .config_schema import load as load_schema
from .layers.subset import check_spec
from .optimize import runs as optimize_runs
from .sections import SECTIONS, settings_classes


class ConfigRefused(ValueError):
    """A config the workflow cannot run: ``problems``, one line each, starting with the field."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def load_workflow_schema(path: str | os.PathLike) -> dict:
    """The workflow's schema (``schemas/config.schema.yaml``) with the settings classes' declarations where it names
    them, and the config keys of the sections that declare theirs (:func:`isoflow.sections.settings_classes`)."""
    return load_schema(path, settings_classes())


def checked_config(config: dict, schema: dict, root: str | os.PathLike = ".") -> dict:
    """``config`` as the workflow runs it: its base merged under it, numbers given as text on the command line made
    numbers, every default of ``schema`` filled in. Raises :class:`ConfigRefused` with the first failing stage's
    mistakes (module docstring). Paths in the config are relative to ``root`` (where Snakemake runs)."""
    try:
        config = resolve(config, root, named="base") if "base" in config else dict(config)
    except ConfigError as exc:
        raise ConfigRefused([str(exc)]) from None
    numbers_from_command_line(config, schema)
    _refuse(schema_problems(config, schema))
    fill_defaults(config, schema)
    _refuse([*task_istar_lambdas_problems(config), *istar_seeds_problems(config), *own_name_problems(config)])
    _refuse(vectors_problems(config))
    _refuse(layer_subset_problems(config))
    _refuse(own_file_problems(config, root))
    return config


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ConfigRefused(problems)


def schema_problems(config: dict, schema: dict) -> list[str]:
    """The schema's objections, one line each: the field (dotted), what is wrong with its value, what is allowed; a
    key under its former name is told where it is now (:data:`isoflow.config_schema.RENAMED_KEYS`)."""
    import jsonschema

    problems = []
    validator = jsonschema.Draft202012Validator(schema)
    dotted = lambda field, key: f"{field}.{key}" if field else key  # noqa: E731  (RENAMED_KEYS' paths)
    for error in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path]):
        field = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path).replace(".[", "[")
        node, value = error.schema, error.instance
        if error.validator == "additionalProperties":
            allowed = sorted(node.get("properties", {}))
            extra = sorted(set(value) - set(allowed))
            renamed = {k: RENAMED_KEYS[dotted(field, k)] for k in extra if dotted(field, k) in RENAMED_KEYS}
            problems += [f"{dotted(field, k)} is now {new} (rename or move the key)" for k, new in renamed.items()]
            extra = [k for k in extra if k not in renamed]
            if extra:
                what = f"{', '.join(map(repr, extra))} {'is' if len(extra) == 1 else 'are'} not a key here"
                problems.append(f"{field or 'the top level'}: {what}; allowed: {', '.join(allowed) or 'none'}")
        elif error.validator == "required":
            missing = error.message.split("'")[1]
            if any(RENAMED_KEYS.get(dotted(field, k)) == dotted(field, missing) for k in value):
                continue  # there under its former name: that problem says where it goes
            problems.append(
                f"{field or 'the top level'}: missing key {missing!r} (required: {', '.join(node['required'])})"
            )
        elif error.validator == "enum":
            problems.append(f"{field}: {value!r} is not one of {', '.join(map(str, node['enum']))}")
        elif error.validator == "type":
            problems.append(f"{field}: {value!r} is not of type {node['type']}")
        else:
            problems.append(f"{field}: {error.message}")
    return problems


def boolean_keys(schema: dict) -> set[tuple[str | None, str]]:
    """(section or None for the top level, key) of every boolean the schema declares."""
    levels = [(None, schema["properties"])] + [
        (n, spec.get("properties", {})) for n, spec in schema["properties"].items()
    ]
    return {(section, k) for section, props in levels for k, v in props.items() if v.get("type") == "boolean"}


def numbers_from_command_line(config: dict, schema: dict) -> None:
    """`--config "optimize={'seeds': [0, 1], 'group_seeds': False}"` gives strings (Snakemake parses values with YAML's
    BaseLoader): make them numbers and booleans, in place."""

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

    for section, key in boolean_keys(schema):
        where = config if section is None else config.get(section)
        if isinstance(where, dict) and isinstance(where.get(key), str) and where[key].lower() in ("true", "false"):
            where[key] = where[key].lower() == "true"
    for name in dict.fromkeys(key for s in SECTIONS.values() for key in s.config_keys):  # the registry's sections
        section = config.get(name)
        if isinstance(section, dict):
            for key, value in section.items():
                if isinstance(value, dict):  # istar.task_istar_lambdas: task -> weights; optimize.steps
                    section[key] = {
                        k: [number(v) for v in vs] if isinstance(vs, list) else number(vs) for k, vs in value.items()
                    }
                elif not isinstance(value, bool):
                    section[key] = [number(v) for v in value] if isinstance(value, list) else number(value)


def istar_seeds_problems(config: dict) -> list[str]:
    """istar.seeds is a subset of optimize.seeds: its lambda = 0 rows are the optimize section's runs."""
    seeds, planned = (config.get("istar") or {}).get("seeds"), config["optimize"]["seeds"]
    extra = sorted(set(seeds or []) - set(planned))
    if not extra:
        return []
    return [
        f"istar.seeds has {extra}, not in optimize.seeds {planned}: the sweep's lambda = 0 rows are the optimize "
        "section's runs; add them to optimize.seeds or leave them out of istar.seeds"
    ]


def task_istar_lambdas_problems(config: dict) -> list[str]:
    """istar.task_istar_lambdas may only name tasks of the sweep (the schema checks each name and its weights)."""
    istar = config.get("istar") or {}
    unknown = sorted(set(istar.get("task_istar_lambdas") or {}) - set(istar.get("tasks", [])))
    if not unknown:
        return []
    return [
        f"istar.task_istar_lambdas names {', '.join(unknown)}, not in istar.tasks {istar.get('tasks', [])}; "
        "add the task to istar.tasks or remove its entry from istar.task_istar_lambdas"
    ]


def own_name_problems(config: dict) -> list[str]:
    """Every task, model and corpus a section names is a built-in one or declared under `own` (the schema checks only
    the spelling); an own name never shadows a built-in one; vectors made elsewhere are never fine-tuned or analysed
    across layers."""
    from .corpora import CORPORA
    from .datasets import DATASETS, WORD_TASKS
    from .models import GGUF_MODELS, MODELS, SENTENCE_MODELS

    problems = []
    own = config.get("own") or {}
    tasks, models, corpora = (own.get(k) or {} for k in ("tasks", "models", "corpora"))
    pretrained = (config.get("pretrain") or {}).get("models") or {}
    for kind, names, builtin in (("tasks", tasks, DATASETS), ("models", models, MODELS), ("corpora", corpora, CORPORA)):
        problems += [
            f"own.{kind}.{n} is the name of a built-in one; rename it (e.g. my-{n})"
            for n in sorted(names)
            if n in builtin
        ]
    for name in sorted(pretrained):
        if name in MODELS or name in models:
            where = "a built-in model" if name in MODELS else f"own.models.{name}"
            problems.append(f"pretrain.models.{name} has the name of {where}; rename one of them (e.g. plain-{name})")
    vectors = {m for m, entry in models.items() if "embeddings" in entry}
    encoders = {m for m, entry in models.items() if "path" in entry or "hub" in entry} | set(pretrained)
    models = {**models, **pretrained}

    def check(field, values, allowed, hint):
        problems.extend(
            f"{field} names {value!r}, which is neither {hint} nor declared under own; add it to own or fix the name"
            for value in values
            if value not in allowed
        )

    sentence_tasks = [t for t in DATASETS if t not in WORD_TASKS]
    optimize, istar, finetune, layers = (config.get(k) or {} for k in ("optimize", "istar", "finetune", "layers"))
    pairs = optimize.get("pairs", [])
    check("optimize.pairs[].task", [e["task"] for e in pairs], [*DATASETS, *tasks], "a built-in task")
    check("optimize.pairs[].model", [e["model"] for e in pairs], [*MODELS, *models], "a built-in model")
    check("optimize.glue.models", optimize["glue"]["models"], [*SENTENCE_MODELS, *models], "a sentence encoder")
    check("istar.tasks", istar.get("tasks", []), [*DATASETS, *tasks], "a built-in task")
    check("istar.models", istar.get("models", []), [*MODELS, *models], "a built-in model")
    for field, names in (("finetune.models", finetune.get("models", [])), ("layers.models", layers.get("models", []))):
        problems += [
            f"{field} names {model!r}, vectors made elsewhere (no encoder to run); give a model folder instead "
            f"(own.models.{model}.path)"
            for model in names
            if model in vectors
        ]
    check("finetune.tasks", finetune.get("tasks", []), [*sentence_tasks, *tasks], "a built-in sentence task")
    check(
        "finetune.models",
        [m for m in finetune.get("models", []) if m not in vectors],
        [*SENTENCE_MODELS, *GGUF_MODELS, *encoders],
        "a sentence encoder, a built-in GGUF model or an own model folder",
    )
    check("layers.corpora", layers.get("corpora", []), [*CORPORA, *corpora], "a built-in corpus")
    for pair in layers.get("cross", []):
        if pair[0] == pair[1]:
            problems.append(f"layers.cross pairs {pair[0]!r} with itself; pair two different models of layers.models")
        else:
            check("layers.cross", pair, layers.get("models", []), "a model of layers.models")
    excluded = ((config.get("pretrain") or {}).get("corpus") or {}).get("exclude_tasks", [])
    check("pretrain.corpus.exclude_tasks", excluded, [*sentence_tasks, *tasks], "a built-in sentence task")
    return problems


# What an own model entry may say of a model with weights, and vectors made elsewhere have none of
WEIGHTS_FIELDS = {
    "dtype": "how a model's weights load",
    "device_map": "how a model's weights are spread over devices",
    "layers": "which of a model's states to measure",
}


def vectors_problems(config: dict) -> list[str]:
    """Vectors made elsewhere come with a file for every task the optimisation runs pair them with, and none of the
    fields of a model with weights (WEIGHTS_FIELDS; a dtype of auto, the schema's default, says nothing)."""
    models = (config.get("own") or {}).get("models") or {}
    vectors = {name: entry["embeddings"] for name, entry in models.items() if "embeddings" in entry}
    pairs = optimize_runs.embedding_pairs(config["optimize"], config.get("istar") or {})
    weightless = [
        f"own.models.{name}.{field}: {entry[field]} names {what}, and vectors made elsewhere have none; remove it"
        for name, entry in models.items()
        for field, what in WEIGHTS_FIELDS.items()
        if "embeddings" in entry and field in entry and (field, entry[field]) != ("dtype", "auto")
    ]
    return weightless + [
        f"own.models.{model}.embeddings has no file for task {task!r}; add `{task}: FILE` (one row per item of "
        "the task)"
        for task, model in pairs
        if model in vectors and task not in vectors[model]
    ]


def own_file_problems(config: dict, root: str | os.PathLike = ".") -> list[str]:
    """Every file and folder the config declares is there, on every run: a missing one is named by its field, never
    ignored because results made from it exist (Snakemake alone would plan nothing and report success)."""
    from .pretrain.corpus import BUILT_IN_SOURCES

    own = config.get("own") or {}
    declared = [(f"own.tasks.{name}.file", entry["file"]) for name, entry in (own.get("tasks") or {}).items()]
    for name, entry in (own.get("models") or {}).items():
        if "path" in entry:
            declared.append((f"own.models.{name}.path", entry["path"]))
        declared += [
            (f"own.models.{name}.embeddings.{task}", path) for task, path in (entry.get("embeddings") or {}).items()
        ]
    declared += [(f"own.corpora.{name}", path) for name, path in (own.get("corpora") or {}).items()]
    sources = ((config.get("pretrain") or {}).get("corpus") or {}).get("sources", [])
    declared += [(f"pretrain.corpus.sources[{i}]", s) for i, s in enumerate(sources) if s not in BUILT_IN_SOURCES]
    same_as = (config.get("finetune") or {}).get("same_as")
    declared += [("finetune.same_as", same_as)] if same_as else []
    return [
        f"{field}: {path} does not exist; fix the path (relative to {root})"
        for field, path in declared
        if not (Path(root) / os.path.expanduser(path)).exists()
    ]


def layer_subset_problems(config: dict) -> list[str]:
    """A model's layer subset (own.models.<name>.layers) spelled as `isoflow layers --layers` reads it."""
    problems = []
    for name, entry in ((config.get("own") or {}).get("models") or {}).items():
        try:
            check_spec(entry.get("layers"))
        except ValueError as e:
            problems.append(f"own.models.{name}.layers: {str(e).removeprefix('--layers ')}")
    return problems
