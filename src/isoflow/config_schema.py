"""The workflow config's JSON schema, with the settings of each run filled in from the classes that declare them.

``schemas/config.schema.yaml`` writes the workflow's own keys (which tasks, models, seeds, ...). A default the library
declares as a constant is named, not pasted: ``x-default: <module.CONSTANT>``. Where a section's keys are a run's
settings, it names the class instead of copying its fields: ``x-settings: {class: <module.Class>}``
(``fields``: only these; ``defaults: false``: without their defaults, as for a model's entry that overrides the
section's). :func:`load` puts the class's :func:`~isoflow.settings.schema_properties` there (type, range, default,
description), so a default lives in its class only. :func:`fill_defaults` gives a config every default its schema has
(the workflow's checks and rules then read one complete config).

>>> schema = {"type": "object", "properties": {"k": {"type": "integer", "default": 3}},
...           "x-settings": {"class": "isoflow.layers.settings.LayerSettings", "fields": ["k_lid"]}}
>>> _expand(schema)["properties"]["k_lid"]["default"]
100
>>> fill_defaults({}, _expand(schema))
{'k': 3, 'k_lid': 100}
"""

from __future__ import annotations

import copy
import importlib
import os

import yaml

from .settings import schema_properties

MARKER = "x-settings"
DEFAULT_MARKER = "x-default"  # `x-default: <module.CONSTANT>`: the key's default is that constant
# Keys under their former names (dotted paths) -> where they are now: a config that uses one is told the new place,
# not only "not a key".
RENAMED_KEYS = {
    "istar.lambdas": "istar.istar_lambdas",
    "istar.task_lambdas": "istar.task_istar_lambdas",
    "finetune.lambdas": "finetune.istar_lambdas",
    "finetune.cosreg": "finetune.cosreg_weights",
    "paper": "optimize.pairs",
    "glue": "optimize.glue (its tasks as glue/<task>)",
    **{k: f"optimize.{k}" for k in ("seeds", "steps", "sample_cap", "label_centred_every", "head", "head_layers")},
    "group_seeds": "optimize.group_seeds",
}


class SchemaError(ValueError):
    """The schema file names a class or field that does not exist, or repeats a setting its class declares."""


def load(path: str | os.PathLike, sections: dict[str, str] | None = None) -> dict:
    """The schema at ``path`` (YAML) with every ``x-settings`` marker replaced by its class's properties.
    ``sections``: config key -> settings class, for sections the file has no entry for (a section of your own,
    isoflow.sections: ``settings``); each becomes a mapping of exactly that class's settings, empty by default."""
    with open(path, encoding="utf-8") as fh:
        schema = yaml.safe_load(fh)
    properties = schema.setdefault("properties", {})
    for key, settings in (sections or {}).items():
        if key in properties:
            raise SchemaError(f"{path}: {key} is written there and also declared by its section ({settings}); keep one")
        properties[key] = {
            "type": "object",
            "default": {},
            "description": f"the {key} section's settings ({settings})",
            MARKER: {"class": settings},
            "additionalProperties": False,
        }
    return _expand(schema, str(path))


def _named(name: str, where: str, marker: str, what: str):
    """The object a marker names by its dotted path (``module.NAME``), or a SchemaError naming the marker."""
    module, _, attr = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise SchemaError(f"{where}: {marker} names {name!r}, which {what} ({exc})") from None


def _expand(node, where: str = "schema"):
    if isinstance(node, list):
        for item in node:
            _expand(item, where)
    elif isinstance(node, dict):
        constant = node.pop(DEFAULT_MARKER, None)
        if constant is not None:  # a default the library declares as a constant: taken from there, not pasted
            value = _named(constant, where, DEFAULT_MARKER, "does not exist")
            node["default"] = list(value) if isinstance(value, tuple) else copy.deepcopy(value)  # JSON has no tuple
        spec = node.pop(MARKER, None)
        if spec is not None:
            props = schema_properties(_named(spec["class"], where, MARKER, "is not a settings class"))
            fields = spec.get("fields", list(props))
            unknown = [f for f in fields if f not in props]
            if unknown:
                raise SchemaError(f"{where}: {MARKER} {spec['class']} has no setting {', '.join(unknown)}")
            props = {f: copy.deepcopy(props[f]) for f in fields}
            if not spec.get("defaults", True):
                for prop in props.values():
                    prop.pop("default", None)
            own = node.setdefault("properties", {})
            repeated = sorted(set(own) & set(props))
            if repeated:
                raise SchemaError(
                    f"{where}: {', '.join(repeated)} written beside {MARKER} {spec['class']}, which declares them; "
                    "remove them from the file"
                )
            own.update(props)
        for value in node.values():
            _expand(value, where)
    return node


def fill_defaults(config: dict, schema: dict) -> dict:
    """``config`` with the default of every key its schema gives one and the config leaves out, at every depth where
    the config has the enclosing mapping (in place; returned). The schema's ``$ref``s to ``$defs`` are followed."""
    defs = schema.get("$defs", {})

    def walk(instance, node):
        if "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], node)
        if isinstance(instance, dict):
            for key, sub in node.get("properties", {}).items():
                if key not in instance and "default" in sub:
                    instance[key] = copy.deepcopy(sub["default"])
                if key in instance:
                    walk(instance[key], sub)
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                for key, value in instance.items():
                    if key not in node.get("properties", {}):
                        walk(value, extra)
        elif isinstance(instance, list) and isinstance(node.get("items"), dict):
            for item in instance:
                walk(item, node["items"])

    walk(config, schema)
    return config
