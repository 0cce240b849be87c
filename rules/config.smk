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
                    section[key] = {k: [number(v) for v in vs] if isinstance(vs, list) else number(vs) for k, vs in value.items()}
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


check_complete(config, workflow.overwrite_configfiles or ["config.yaml"])
numbers_from_command_line(config)


validate(config, SCHEMA)
check_task_lambdas(config)
