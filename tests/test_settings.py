"""Settings declared once: the command line and the config schema agree with the settings dataclasses, defaults and
ranges included."""

from __future__ import annotations

import argparse
import dataclasses

import pytest
import yaml

from isoflow import settings as declared
from isoflow.finetune.settings import FinetuneSettings
from isoflow.pretrain.settings import CorpusSettings, PretrainSettings
from tests.conftest import ROOT

SCHEMA = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())["properties"]
# Where each settings class lives in the config schema: (properties, with defaults?, the section's keys that are not
# settings of one run: the lists of runs it makes)
PRETRAIN = SCHEMA["pretrain"]["properties"]
IN_SCHEMA = [
    (CorpusSettings, PRETRAIN["corpus"]["properties"], True, {"sources", "exclude_tasks"}),
    (PretrainSettings, PRETRAIN["training"]["properties"], True, set()),
    (PretrainSettings, PRETRAIN["models"]["additionalProperties"]["properties"], False, set()),
    (FinetuneSettings, SCHEMA["finetune"]["properties"], True, {"tasks", "models", "lambdas", "cosreg", "seeds", "cosreg_points"}),
]
SETTINGS = [CorpusSettings, PretrainSettings, FinetuneSettings]


@pytest.mark.parametrize("cls, properties, with_defaults, lists", IN_SCHEMA, ids=lambda v: getattr(v, "__name__", ""))
def test_config_schema_is_the_settings_class(cls, properties, with_defaults, lists):
    expected = declared.schema_properties(cls)
    if not with_defaults:
        expected = {name: {k: v for k, v in prop.items() if k != "default"} for name, prop in expected.items()}
    assert {name: properties.get(name) for name in expected} == expected
    extra = set(properties) - set(expected) - lists
    assert not extra, f"schema keys without a setting: {extra}"


def _parser(cls):
    parser = argparse.ArgumentParser(exit_on_error=False)
    declared.add_arguments(parser, cls)
    return parser


def _default(cls):
    return cls(task="t", model="m") if cls is FinetuneSettings else cls()


@pytest.mark.parametrize("cls", SETTINGS)
def test_command_line_defaults_and_ranges_are_the_settings_class(cls):
    parser = _parser(cls)
    identity = {"task": "t", "model": "m"} if cls is FinetuneSettings else {}
    assert declared.from_namespace(cls, parser.parse_args([]), **identity) == _default(cls)
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if not meta.get("cli", False):
            continue
        flag = declared.flag_of(f)
        for key, outside in (("minimum", -1), ("exclusiveMinimum", 0), ("maximum", 1), ("exclusiveMaximum", 0)):
            bound = meta.get(key)
            if bound is None:
                continue
            value = bound + outside if key in ("minimum", "maximum") else bound
            value = bound - 1 if key == "minimum" else value
            with pytest.raises(argparse.ArgumentError):
                parser.parse_args([flag, str(value)])
            with pytest.raises(ValueError, match=f.name):
                declared.check(dataclasses.replace(_default(cls), **{f.name: value}))
        if meta.get("choices") and meta.get("cli"):
            with pytest.raises(argparse.ArgumentError):
                parser.parse_args([flag, "not-a-choice"])


def test_a_setting_outside_its_range_is_named():
    with pytest.raises(ValueError, match="heldout_fraction must be less than 0.5; got 0.5"):
        declared.check(CorpusSettings(heldout_fraction=0.5))
    with pytest.raises(ValueError, match="objective must be one of masked, causal; got 'denoising'"):
        declared.check(PretrainSettings(objective="denoising"))
