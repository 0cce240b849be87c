"""Settings declared once: a dataclass field carries its default, its range and its help, and the command line, the
config schema and the checks are derived from it.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Toy:
...     steps: int = setting(100, "optimisation steps", minimum=1)
>>> check(Toy(steps=0))
Traceback (most recent call last):
...
ValueError: steps must be at least 1; got 0
>>> schema_properties(Toy)["steps"]
{'type': 'integer', 'default': 100, 'minimum': 1, 'description': 'optimisation steps'}
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import shlex
import typing
from typing import Any

_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean"}


def setting(
    default: Any,
    help: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: float | None = None,
    exclusive_maximum: float | None = None,
    choices: tuple | None = None,
    cli: bool = True,
    schema: bool = True,
    flag: str | None = None,
    metavar: str | None = None,
    quiet_at_default: bool = False,
) -> Any:
    """A dataclass field with its default, help and allowed values. ``cli=False``: not a command-line option;
    ``schema=False``: not a key of the config schema (a run's identity, e.g. its seed, which the config lists);
    ``flag``: the option's name when it is not ``--<field-name>``; ``quiet_at_default``: a rule's command
    (:func:`command_line`) gives it only when it is not its default — a setting added after runs were made with
    its default behaviour, so that their jobs' commands, and Snakemake's reasons to run them again, stay as they
    were."""
    meta = {
        "help": help,
        "minimum": minimum,
        "maximum": maximum,
        "exclusiveMinimum": exclusive_minimum,
        "exclusiveMaximum": exclusive_maximum,
        "choices": choices,
        "cli": cli,
        "schema": schema,
        "flag": flag,
        "metavar": metavar,
        "quiet_at_default": quiet_at_default,
    }
    return dataclasses.field(default=default, metadata=meta)


def flag_of(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def _fields(cls) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if "help" in f.metadata]


def _type_of(cls, f: dataclasses.Field) -> type:
    """The field's type: int, float, str or bool; a list setting's (``tuple[int, ...]``) is that of its items."""
    return _kind(cls, f)[0]


@functools.cache
def _type_hints(cls) -> dict[str, Any]:
    """A settings class's field types, evaluated once per class: its annotations are strings (``from __future__ import
    annotations``), and evaluating them anew for every field made half of a full config's dry run."""
    return typing.get_type_hints(cls)


def _kind(cls, f: dataclasses.Field) -> tuple[type, bool]:
    """(type, is a list): ``tuple[float, ...]`` is (float, True), ``int | None`` is (int, False)."""
    hint = _type_hints(cls)[f.name]
    if typing.get_origin(hint) is tuple:
        return typing.get_args(hint)[0], True
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return (args[0] if args else hint), False


def check_value(name: str, value: Any, meta: dict) -> None:
    """Raise ValueError naming ``name``, the allowed range and the value, unless ``value`` is allowed."""
    if meta.get("choices") is not None:
        if value not in meta["choices"]:
            raise ValueError(f"{name} must be one of {', '.join(map(str, meta['choices']))}; got {value!r}")
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value}")
    bounds = (
        ("minimum", "at least", lambda v, b: v >= b),
        ("maximum", "at most", lambda v, b: v <= b),
        ("exclusiveMinimum", "greater than", lambda v, b: v > b),
        ("exclusiveMaximum", "less than", lambda v, b: v < b),
    )
    for key, words, ok in bounds:
        bound = meta.get(key)
        if bound is not None and value is not None and not ok(value, bound):
            raise ValueError(f"{name} must be {words} {bound:g}; got {value}")


def check(settings) -> None:
    """Check every field of a settings object against its declared type and range; the first violation raises."""
    import numbers

    def check_one(name: str, value, kind: type) -> None:
        wrong = (
            (isinstance(value, bool) and kind is not bool)
            or (kind is int and not isinstance(value, numbers.Integral))
            or (kind is float and not isinstance(value, numbers.Real))
            or (kind is bool and not isinstance(value, bool))
        )
        if wrong:
            raise ValueError(
                f"{name} must be {'an integer' if kind is int else 'a number' if kind is float else kind.__name__}; "
                f"got {value!r}"
            )
        check_value(name, value, f.metadata)

    for f in _fields(type(settings)):
        value, (kind, is_list) = getattr(settings, f.name), _kind(type(settings), f)
        if not is_list:
            check_one(f.name, value, kind)
            continue
        if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or not value:
            raise ValueError(f"{f.name} must be a non-empty list; got {value!r}")
        if len(set(value)) != len(value):
            raise ValueError(f"{f.name} must not repeat a value; got {list(value)}")
        for item in value:
            check_one(f"each of {f.name}", item, kind)


def _parser_type(name: str, kind: type, meta: dict, is_list: bool = False):
    def one(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
        try:
            check_value("the value", value, meta)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).replace("the value ", "each value " if is_list else "")) from None
        return value

    def parse(text: str):
        if not is_list:
            return one(text)
        values = tuple(one(x.strip()) for x in text.split(",") if x.strip())
        if not values:
            raise argparse.ArgumentTypeError(f"expected comma-separated values, e.g. 1,2,3; got {text!r}")
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"a value is repeated in {text!r}")
        return values

    return parse


def _text(value) -> str:
    """A value as the command line writes it (a list: comma-separated)."""
    return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


def add_arguments(parser: argparse.ArgumentParser, cls, *, skip: tuple[str, ...] = ()) -> None:
    """One ``--name`` option per field of ``cls`` (underscores become hyphens), typed and range-checked, its help
    ending with the default."""
    for f in _fields(cls):
        if f.name in skip or not f.metadata["cli"]:
            continue
        (kind, is_list), meta = _kind(cls, f), f.metadata
        help_text = f"{meta['help']} (default {_text(f.default)})"
        if is_list:
            parser.add_argument(
                flag_of(f),
                dest=f.name,
                type=_parser_type(f.name, kind, meta, is_list=True),
                default=f.default,
                help=help_text,
                metavar=meta.get("metavar") or "X,X",
            )
        elif kind is bool:
            parser.add_argument(
                flag_of(f), dest=f.name, action=argparse.BooleanOptionalAction, default=f.default, help=help_text
            )
        elif meta["choices"] is not None:
            parser.add_argument(flag_of(f), dest=f.name, choices=meta["choices"], default=f.default, help=help_text)
        else:
            parser.add_argument(
                flag_of(f),
                dest=f.name,
                type=_parser_type(f.name, kind, meta),
                default=f.default,
                help=help_text,
                metavar=meta.get("metavar"),
            )


def from_namespace(cls, args: argparse.Namespace, **overrides):
    """The settings object of ``cls`` from parsed options (fields without an option keep their default)."""
    values = {f.name: getattr(args, f.name) for f in _fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **overrides})


def cli_values(cls, args: argparse.Namespace) -> dict:
    """The values of the command-line settings of ``cls`` in parsed options (setting name -> value)."""
    return {f.name: getattr(args, f.name) for f in _fields(cls) if f.metadata["cli"] and hasattr(args, f.name)}


def schema_properties(cls, *, skip: tuple[str, ...] = ()) -> dict[str, dict]:
    """JSON-schema properties of the fields of ``cls``: type, default, range or enum, description."""
    out = {}
    for f in _fields(cls):
        if f.name in skip or not f.metadata.get("schema", True):
            continue
        meta, (kind, is_list) = f.metadata, _kind(cls, f)
        item: dict[str, Any] = {"type": _JSON_TYPES[kind]}
        if meta["choices"] is not None:
            item["enum"] = list(meta["choices"])
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if meta[key] is not None:
                item[key] = meta[key]
        if is_list:
            # At least one item, but where the default is none (a list one may leave empty: dynamics.revisions)
            least = {"minItems": 1} if f.default else {}
            prop = {"type": "array", "items": item, **least, "uniqueItems": True, "default": list(f.default)}
        else:
            prop = {**item, "default": f.default}
            prop = {"type": prop.pop("type"), "default": prop.pop("default"), **prop}
        prop["description"] = meta["help"]
        out[f.name] = prop
    return out


def as_dict(settings) -> dict:
    return dataclasses.asdict(settings)


def from_values(cls, values: dict):
    """The settings ``values`` (a config section, its defaults filled in) give: its keys that are settings of
    ``cls``, the others left out, checked as the command would check them."""
    return cls(**{f.name: values[f.name] for f in _fields(cls) if f.name in values})


def command_line(cls, values: dict) -> str:
    """The options that give ``values`` (setting name -> value; keys that are not command-line settings of ``cls``
    are left out): how a workflow rule passes a config section to a command."""
    parts = []
    for f in _fields(cls):
        if f.name not in values or not f.metadata["cli"]:
            continue
        if f.metadata.get("quiet_at_default") and values[f.name] == f.default:
            continue
        value = values[f.name]
        if _type_of(cls, f) is bool:
            parts.append(flag_of(f) if value else "--no-" + flag_of(f)[2:])
        else:
            parts.append(f"{flag_of(f)} {shlex.quote(_text(value))}")  # quoted: an empty string is an argument too
    return " ".join(parts)
