# Config checks before anything is planned: a file's base merged under it, the JSON schema, the names, and the
# own files. A mistake stops the workflow with one line per mistake, naming the config file, the field and the fix
# (refuse), instead of a traceback or a schema dump.

import os
import sys

from isoflow.config_schema import RENAMED_KEYS, fill_defaults
from isoflow.config_schema import load as load_schema
from isoflow.pretrain.corpus import BUILT_IN_SOURCES
from isoflow.sections import SECTIONS, settings_classes

SCHEMA = os.path.join(workflow.basedir, "schemas", "config.schema.yaml")
# with the settings classes' declarations where the file names them, and the config keys of sections that declare theirs
_SCHEMA = load_schema(SCHEMA, settings_classes())
BOOLEAN_KEYS = {  # (section or None for the top level, key) of every boolean the schema declares
    (section, k)
    for section, props in [(None, _SCHEMA["properties"])]
    + [(name, spec.get("properties", {})) for name, spec in _SCHEMA["properties"].items()]
    for k, v in props.items()
    if v.get("type") == "boolean"
}


CONFIG_FILES = ", ".join(
    os.path.relpath(f) if os.path.abspath(f).startswith(os.getcwd() + os.sep) else str(f)
    for f in workflow.overwrite_configfiles or ["config.yaml"]
)


def refuse(*problems):
    """Stop before anything is planned: one line per problem, each naming the config file (problems start with the
    field), on the terminal."""
    for problem in problems:
        print(f"{CONFIG_FILES}: {problem}", file=sys.stderr)
    sys.exit(1)


def schema_problems(config):
    """The schema's objections, one line each: the field (dotted), what is wrong with its value, what is allowed."""
    import jsonschema

    problems = []
    validator = jsonschema.Draft202012Validator(_SCHEMA)
    dotted = lambda field, key: f"{field}.{key}" if field else key  # noqa: E731  (RENAMED_KEYS' paths)
    for error in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path]):
        field = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path).replace(".[", "[")
        schema, value = error.schema, error.instance
        if error.validator == "additionalProperties":
            allowed = sorted(schema.get("properties", {}))
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
                f"{field or 'the top level'}: missing key {missing!r} (required: {', '.join(schema['required'])})"
            )
        elif error.validator == "enum":
            problems.append(f"{field}: {value!r} is not one of {', '.join(map(str, schema['enum']))}")
        elif error.validator == "type":
            problems.append(f"{field}: {value!r} is not of type {schema['type']}")
        else:
            problems.append(f"{field}: {error.message}")
    return problems


def numbers_from_command_line(config):
    """`--config "optimize={'seeds': [0, 1], 'group_seeds': False}"` gives strings (Snakemake parses values with YAML's
    BaseLoader): make them numbers and booleans."""

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

    for section, key in BOOLEAN_KEYS:
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


def check_istar_seeds(config):
    """istar.seeds is a subset of optimize.seeds: its lambda = 0 rows are the optimize section's runs."""
    seeds, planned = (config.get("istar") or {}).get("seeds"), config["optimize"]["seeds"]
    extra = sorted(set(seeds or []) - set(planned))
    if extra:
        refuse(
            f"istar.seeds has {extra}, not in optimize.seeds {planned}: the sweep's lambda = 0 rows are the optimize "
            "section's runs; add them to optimize.seeds or leave them out of istar.seeds"
        )


def check_task_istar_lambdas(config):
    """istar.task_istar_lambdas may only name tasks of the sweep (the schema checks each name and its weights)."""
    istar = config.get("istar") or {}
    unknown = sorted(set(istar.get("task_istar_lambdas") or {}) - set(istar.get("tasks", [])))
    if unknown:
        refuse(
            f"istar.task_istar_lambdas names {', '.join(unknown)}, not in istar.tasks {istar.get('tasks', [])}; "
            "add the task to istar.tasks or remove its entry from istar.task_istar_lambdas"
        )


def check_own_names(config):
    """Every task, model and corpus a section names is a built-in one or declared under `own` (the schema checks only
    the spelling); an own name never shadows a built-in one; vectors made elsewhere are never fine-tuned or analysed
    across layers. (That they come with a file for every task they are paired with: common.smk, where the pairs are.)"""
    from isoflow.corpora import CORPORA
    from isoflow.datasets import DATASETS, WORD_TASKS
    from isoflow.models import GGUF_MODELS, MODELS, SENTENCE_MODELS

    own = config.get("own") or {}
    tasks, models, corpora = (own.get(k) or {} for k in ("tasks", "models", "corpora"))
    pretrained = (config.get("pretrain") or {}).get("models") or {}
    for kind, names, builtin in (("tasks", tasks, DATASETS), ("models", models, MODELS), ("corpora", corpora, CORPORA)):
        taken = sorted(set(names) & set(builtin))
        if taken:
            refuse(f"own.{kind}.{taken[0]} is the name of a built-in one; rename it (e.g. my-{taken[0]})")
    for name in sorted(pretrained):
        if name in MODELS or name in models:
            where = "a built-in model" if name in MODELS else f"own.models.{name}"
            refuse(f"pretrain.models.{name} has the name of {where}; rename one of them (e.g. plain-{name})")
    vectors = {m: set(entry["embeddings"]) for m, entry in models.items() if "embeddings" in entry}
    encoders = {m for m, entry in models.items() if "path" in entry or "hub" in entry} | set(pretrained)
    models = {**models, **pretrained}

    def check(field, values, allowed, hint):
        for value in values:
            if value not in allowed:
                refuse(
                    f"{field} names {value!r}, which is neither {hint} nor declared under own; add it to own or fix the name"
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
        for model in names:
            if model in vectors:
                refuse(
                    f"{field} names {model!r}, vectors made elsewhere (no encoder to run); give a model folder "
                    f"instead (own.models.{model}.path)"
                )
    check("finetune.tasks", finetune.get("tasks", []), [*sentence_tasks, *tasks], "a built-in sentence task")
    check(
        "finetune.models",
        finetune.get("models", []),
        [*SENTENCE_MODELS, *GGUF_MODELS, *encoders],
        "a sentence encoder, a built-in GGUF model or an own model folder",
    )
    check("layers.corpora", layers.get("corpora", []), [*CORPORA, *corpora], "a built-in corpus")
    for pair in layers.get("cross", []):
        if pair[0] == pair[1]:
            refuse(f"layers.cross pairs {pair[0]!r} with itself; pair two different models of layers.models")
        check("layers.cross", pair, layers.get("models", []), "a model of layers.models")
    excluded = ((config.get("pretrain") or {}).get("corpus") or {}).get("exclude_tasks", [])
    check("pretrain.corpus.exclude_tasks", excluded, [*sentence_tasks, *tasks], "a built-in sentence task")


def check_own_files(config):
    """Every file and folder the config declares is there, on every run: a missing one is named by its field, never
    ignored because results made from it exist (Snakemake alone would plan nothing and report success)."""
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
    missing = [(field, path) for field, path in declared if not os.path.exists(os.path.expanduser(path))]
    if missing:
        refuse(
            *(f"{field}: {path} does not exist; fix the path (relative to {os.getcwd()})" for field, path in missing)
        )


def with_base(config):
    """A config naming `base: <file>` is that file with its own keys on top (isoflow.config_files): merged in place,
    before any check, so the checks see the whole config."""
    if "base" not in config:
        return
    from isoflow.config_files import ConfigError, resolve

    try:
        merged = resolve(config, os.getcwd(), named="base")
    except ConfigError as exc:
        refuse(str(exc))
    config.clear()
    config.update(merged)


with_base(config)
numbers_from_command_line(config)


problems = schema_problems(config)
if problems:
    refuse(*problems)
fill_defaults(config, _SCHEMA)
check_task_istar_lambdas(config)
check_istar_seeds(config)
check_own_names(config)
