"""Settings declared once: for every settings class, the real command line (its options, defaults and ranges) and the
config schema (its keys, defaults and ranges) are what the class declares, and the library refuses what they refuse."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import re

import pytest
import yaml

from isoflow import settings as declared
from isoflow.cli import build_parser
from isoflow.config_checks import load_workflow_schema
from isoflow.config_files import load as load_config
from isoflow.config_schema import SchemaError, fill_defaults
from isoflow.config_schema import load as load_schema
from isoflow.dynamics.settings import DynamicsSettings
from isoflow.finetune.settings import FinetuneSettings
from isoflow.layers.settings import LayerSettings
from isoflow.optimize.settings import Settings as OptimizeSettings
from isoflow.pretrain.settings import CorpusSettings, PretrainSettings
from isoflow.stability import StabilitySettings
from tests.conftest import ROOT

SCHEMA = load_workflow_schema(ROOT / "schemas" / "config.schema.yaml")["properties"]
SHIPPED_CONFIGS = sorted(
    p.relative_to(ROOT).as_posix() for p in [ROOT / "config.yaml", *(ROOT / "config").glob("*.yaml")]
)
PRETRAIN = SCHEMA["pretrain"]["properties"]
# Where each settings class lives in the config schema: (properties, with defaults?, the section's keys that are not
# settings of one run: what runs it makes). The optimisation's settings are its section's, but ζ: the istar
# section's.
IN_SCHEMA = [
    (CorpusSettings, PRETRAIN["corpus"]["properties"], True, {"sources", "exclude_tasks"}),
    (PretrainSettings, PRETRAIN["training"]["properties"], True, set()),
    (PretrainSettings, PRETRAIN["models"]["additionalProperties"]["properties"], False, set()),
    (
        FinetuneSettings,
        SCHEMA["finetune"]["properties"],
        True,
        {
            "tasks",
            "models",
            "istar_lambdas",
            "cosreg_weights",
            "meandir_weights",
            "seeds",
            "cosreg_points",
            "lr_candidates",
            "gradient_batches",
            "same_as",
        },
    ),
    (LayerSettings, SCHEMA["layers"]["properties"], True, {"models", "static", "corpora", "cross", "cross_words"}),
    (StabilitySettings, SCHEMA["stability"]["properties"], True, set()),
    (DynamicsSettings, SCHEMA["dynamics"]["properties"], True, set()),
    (
        OptimizeSettings,
        {**SCHEMA["optimize"]["properties"], "zeta": SCHEMA["istar"]["properties"]["zeta"]},
        True,
        {"pairs", "glue", "seeds", "steps", "group_seeds"},
    ),
]
# Each class's command, and the arguments it requires besides the settings.
COMMANDS = {
    CorpusSettings: ("pretrain-corpus", ["--out", "o"]),
    PretrainSettings: ("pretrain", ["--corpus", "c", "--out", "o"]),
    FinetuneSettings: ("finetune", ["--task", "t", "--model", "m"]),
    LayerSettings: ("layers", ["--model", "m", "--corpus", "c"]),
    StabilitySettings: ("stability", []),
    OptimizeSettings: ("optimize", ["--task", "t", "--model", "m"]),
}
# Settings of a section that has no command of its own for them: the dynamics section's are its config key's, and its
# rules give the layers command the ones it shares (isoflow.settings.command_line).
CONFIG_ONLY = {DynamicsSettings}
IDENTITY = {
    FinetuneSettings: {"task": "t", "model": "m"},
    OptimizeSettings: {"task": "t", "model": "m", "seed": 0, "steps": 1},
}


def _command(cls) -> tuple[argparse.ArgumentParser, list[str]]:
    name, required = COMMANDS[cls]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name], required


def _refused(parser: argparse.ArgumentParser, args: list[str]) -> str:
    """The error argparse prints for ``args`` ('' when they parse)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        parser.parse_args(args)
        return ""
    return err.getvalue()


@pytest.mark.parametrize("cls, properties, with_defaults, lists", IN_SCHEMA, ids=lambda v: getattr(v, "__name__", ""))
def test_config_schema_is_the_settings_class(cls, properties, with_defaults, lists):
    expected = declared.schema_properties(cls)
    if not with_defaults:
        expected = {name: {k: v for k, v in prop.items() if k != "default"} for name, prop in expected.items()}
    assert {name: properties.get(name) for name in expected} == expected
    extra = set(properties) - set(expected) - lists
    assert not extra, f"schema keys without a setting: {extra}"


def test_the_schema_file_names_the_classes_and_copies_none_of_their_settings(tmp_path):
    """schemas/config.schema.yaml carries no setting a class declares (no default written twice): it names the class,
    and the loader refuses a setting written beside the name, or a class or field that does not exist."""
    raw = (ROOT / "schemas/config.schema.yaml").read_text()
    for cls, *_ in IN_SCHEMA:
        for name, prop in declared.schema_properties(cls).items():
            assert prop["description"] not in raw, f"{cls.__name__}.{name} is copied into the schema file"
    layers = yaml.safe_load(raw)
    layers["properties"]["layers"]["properties"]["k_lid"] = {"type": "integer", "default": 100}
    (tmp_path / "repeated.yaml").write_text(yaml.safe_dump(layers))
    with pytest.raises(SchemaError, match="k_lid written beside x-settings isoflow.layers.settings.LayerSettings"):
        load_schema(tmp_path / "repeated.yaml")
    (tmp_path / "unknown.yaml").write_text(
        yaml.safe_dump({"x-settings": {"class": "isoflow.layers.settings.LayerSettings", "fields": ["kk"]}})
    )
    with pytest.raises(SchemaError, match="has no setting kk"):
        load_schema(tmp_path / "unknown.yaml")
    (tmp_path / "constant.yaml").write_text(yaml.safe_dump({"properties": {"k": {"x-default": "isoflow.nowhere.K"}}}))
    with pytest.raises(SchemaError, match="x-default names 'isoflow.nowhere.K', which does not exist"):
        load_schema(tmp_path / "constant.yaml")


def test_a_section_that_declares_its_settings_class_gets_its_config_key_from_it(tmp_path):
    """A section of one's own names its settings class (isoflow.sections: ``settings``) instead of writing the schema
    file: its key is exactly the class's fields with their defaults, filled in when a config leaves it out; a key the
    file already writes is refused (one place per key)."""
    schema = load_schema(ROOT / "schemas/config.schema.yaml", {"mine": "isoflow.layers.settings.LayerSettings"})
    mine = schema["properties"]["mine"]
    assert mine["properties"] == declared.schema_properties(LayerSettings) and mine["additionalProperties"] is False
    assert fill_defaults({}, schema)["mine"]["k_lid"] == LayerSettings().k_lid
    with pytest.raises(SchemaError, match="layers is written there and also declared by its section"):
        load_schema(ROOT / "schemas/config.schema.yaml", {"layers": "isoflow.layers.settings.LayerSettings"})


# Written although equal to their defaults: dvc-configs.yaml repeats the paper config's folders for DVC.
RESTATED_ON_PURPOSE = {("config.yaml", "data_dir"), ("config.yaml", "results_dir")}


def _restated(own, under, schema, path=()):
    """The dotted keys of ``own`` whose value is what they would be without it: the base's (``under``), else the
    schema's default."""
    out = []
    for key, value in (own or {}).items():
        spec = schema.get("properties", {}).get(key) or (schema.get("additionalProperties") or {})
        before = under.get(key, spec.get("default")) if isinstance(under, dict) else spec.get("default")
        if isinstance(value, dict) and isinstance(spec, dict):
            out += _restated(value, before if isinstance(before, dict) else {}, spec, (*path, key))
        elif value == before and before is not None:
            out.append(".".join((*path, key)))
    return out


def dvc_shared_configs() -> set[str]:
    """The configs dvc-configs.yaml shares, and the one its comment offers to add (the quick start, which CI shares)."""
    text = (ROOT / "dvc-configs.yaml").read_text()
    listed = {entry["config"] for entry in yaml.safe_load(text)["configs"].values()}
    offered = set(re.findall(r"^#\s+\w+: \{config: ([^,]+),", text, re.M))
    return listed | offered


def test_every_shipped_config_is_an_overlay_but_those_dvc_shares():
    """Each shipped config names its base and writes what it changes (a default or a shared setting changed in one
    place reaches every config built on it), except config.yaml and the configs DVC shares: DVC reads a config's
    sections as params from the file itself, so a shared config is whole."""
    shared = dvc_shared_configs()
    assert shared == {"config.yaml", "config/offline.yaml"}, shared
    for config in SHIPPED_CONFIGS:
        own = yaml.safe_load((ROOT / config).read_text())
        assert ("base" in own) == (config not in shared), (
            f"{config}: {'a shared config has' if config in shared else 'no'} base:"
        )


@pytest.mark.parametrize("config", [*SHIPPED_CONFIGS, "examples/own/config.yaml"])
def test_a_config_writes_only_what_differs_from_its_base_and_the_defaults(config):
    """No shipped config restates a default (a settings class's or the schema's) or its base's value: each writes
    what it changes, so a default changed in its class reaches every config."""
    schema = load_workflow_schema(ROOT / "schemas/config.schema.yaml")
    own = yaml.safe_load((ROOT / config).read_text())
    under = load_config(own["base"], ROOT) if "base" in own else {}
    restated = [
        k
        for k in _restated({k: v for k, v in own.items() if k != "base"}, under, schema)
        if (config, k) not in RESTATED_ON_PURPOSE
    ]
    assert restated == [], f"{config} restates {restated}"


@pytest.mark.parametrize("config", SHIPPED_CONFIGS)
def test_defaults_filled_in_as_snakemake_fills_them(config, tmp_path):
    """fill_defaults (the workflow's) against Snakemake's own validate(set_default=True) on the loaded schema: the
    same complete config for every shipped config."""
    from snakemake.utils import validate

    schema = load_workflow_schema(ROOT / "schemas/config.schema.yaml")
    (tmp_path / "schema.yaml").write_text(yaml.safe_dump(schema))
    ours, theirs = load_config(config, ROOT), load_config(config, ROOT)
    ours.pop("base", None), theirs.pop("base", None)
    validate(theirs, str(tmp_path / "schema.yaml"))
    assert fill_defaults(ours, schema) == theirs


@pytest.mark.parametrize("config", SHIPPED_CONFIGS)
def test_no_config_restates_a_default(config):
    """A setting's default lives in its class: a config writes a setting only where it differs from it (or from its
    base's value, which it changes back). DVC reads the top-level keys dvc.yaml names as params from the file
    itself: a config DVC may track keeps those."""
    raw_schema = yaml.safe_load((ROOT / "schemas/config.schema.yaml").read_text())
    schema = load_workflow_schema(ROOT / "schemas/config.schema.yaml")
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].values()
    read_by_dvc = {k for s in stages for p in s["do"].get("params", []) for k in sum(p.values(), [])}
    own = yaml.safe_load((ROOT / config).read_text())
    base = load_config(own["base"], ROOT) if "base" in own else {}

    def restated(value, loaded, raw, base, path):
        if not isinstance(value, dict):
            return []
        found = []
        for key, sub in value.items():
            if key in loaded.get("properties", {}):
                prop, in_base = loaded["properties"][key], base.get(key)
                from_class = key not in (raw or {}).get("properties", {})
                if from_class and sub == prop.get("default", ...) and in_base in (None, sub):
                    found.append(f"{path}{key}: {sub!r}")
                raw_sub = (raw or {}).get("properties", {}).get(key)
                found += restated(sub, prop, raw_sub, in_base if isinstance(in_base, dict) else {}, f"{path}{key}.")
            elif isinstance(loaded.get("additionalProperties"), dict):
                extra, in_base = (raw or {}).get("additionalProperties"), base.get(key)
                found += restated(sub, loaded["additionalProperties"], extra, in_base or {}, f"{path}{key}.")
        return [f for f in found if f.split(":")[0] not in read_by_dvc]

    found = restated(own, schema, raw_schema, base, "")
    assert not found, f"{config} restates its settings classes' defaults: {found}"


@pytest.mark.parametrize("cls", list(COMMANDS), ids=lambda c: c.__name__)
def test_the_command_line_has_every_setting_with_its_default_and_range(cls):
    parser, required = _command(cls)
    parsed = parser.parse_args(required)
    defaults = cls(**IDENTITY.get(cls, {}))
    fields = [f for f in dataclasses.fields(cls) if f.metadata.get("cli")]
    assert fields, cls
    for f in fields:
        flag, meta = declared.flag_of(f), f.metadata
        assert getattr(parsed, f.name) == getattr(defaults, f.name), (cls.__name__, f.name)
        # a value just outside each bound: below a minimum, at an exclusive one, above a maximum
        outside = [
            (meta.get("minimum"), -1),
            (meta.get("exclusiveMinimum"), 0),
            (meta.get("maximum"), 1),
            (meta.get("exclusiveMaximum"), 0),
        ]
        for bound, step in outside:
            if bound is None:
                continue
            value = bound + step
            assert flag in _refused(parser, [*required, flag, str(value)]), (flag, value)
            bad = (value,) if isinstance(getattr(defaults, f.name), tuple) else value
            with pytest.raises(ValueError, match=f.name):
                declared.check(dataclasses.replace(defaults, **{f.name: bad}))
        if meta.get("choices"):
            assert flag in _refused(parser, [*required, flag, "not-a-choice"])


def test_every_settings_class_is_checked_here():
    """A settings class added to the library must be added above (its schema place and its command)."""
    import importlib
    import pkgutil

    import isoflow

    found = set()
    for info in pkgutil.walk_packages(isoflow.__path__, "isoflow."):
        if info.name.endswith("settings") or info.name == "isoflow.stability":
            module = importlib.import_module(info.name)
            found |= {
                obj
                for obj in vars(module).values()
                if dataclasses.is_dataclass(obj)
                and isinstance(obj, type)
                and obj.__module__ == module.__name__
                and any("help" in f.metadata for f in dataclasses.fields(obj))
            }
    assert found == set(COMMANDS) | CONFIG_ONLY
    assert not [f for cls in CONFIG_ONLY for f in dataclasses.fields(cls) if f.metadata.get("cli")]


def test_a_list_setting_is_comma_separated_and_each_value_checked():
    parser, _ = _command(StabilitySettings)
    assert parser.parse_args(["--zetas", "0,0.2"]).zetas == (0.0, 0.2)
    assert "each value must be at most 1; got 2.0" in _refused(parser, ["--zetas", "0,2"])
    assert "repeated" in _refused(parser, ["--dims", "8,8"])
    with pytest.raises(ValueError, match="each of zetas must be at most 1; got 2"):
        StabilitySettings(zetas=(0.0, 2.0))
    assert declared.command_line(StabilitySettings, {"zetas": [0, 0.5], "repeats": 3}) == "--zetas 0,0.5 --repeats 3"


def test_a_setting_outside_its_range_is_named():
    with pytest.raises(ValueError, match="heldout_fraction must be less than 0.5; got 0.5"):
        declared.check(CorpusSettings(heldout_fraction=0.5))
    with pytest.raises(ValueError, match="objective must be one of masked, causal; got 'denoising'"):
        declared.check(PretrainSettings(objective="denoising"))
    with pytest.raises(ValueError, match="sample_cap must be at least 2; got 1"):
        OptimizeSettings("t", "m", 0, 10, sample_cap=1)


def test_a_setting_quiet_at_its_default_is_left_out_of_a_rules_command_there_only():
    """A setting added after runs were made with its default behaviour (quiet_at_default) is given to a command only
    when it is set, so that the earlier jobs' commands are unchanged; an empty string set is quoted, not lost."""
    from isoflow.finetune.settings import FinetuneSettings
    from isoflow.pretrain.settings import PretrainSettings

    assert "--checkpoints" not in declared.command_line(PretrainSettings, {"steps": 10, "checkpoints": 0})
    assert declared.command_line(PretrainSettings, {"steps": 10, "checkpoints": 20}) == "--steps 10 --checkpoints 20"
    assert declared.command_line(FinetuneSettings, {"matched_pull_from": ""}) == ""
    assert declared.command_line(FinetuneSettings, {"matched_pull_from": "a b"}) == "--matched-pull-from 'a b'"
    assert declared.command_line(FinetuneSettings, {"points": ""}) == "--points ''"
