"""Settings declared once: the command line and the config schema agree with the settings dataclasses, defaults and
ranges included."""

from __future__ import annotations

import argparse
import dataclasses

import pytest
import yaml

from isoflow import settings as declared
from isoflow.pretrain.settings import CorpusSettings, PretrainSettings
from tests.conftest import ROOT

SCHEMA = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())["properties"]
# Where each settings class lives in the config schema: (properties, with defaults?)
IN_SCHEMA = [
    (CorpusSettings, SCHEMA["pretrain"]["properties"]["corpus"]["properties"], True),
    (PretrainSettings, SCHEMA["pretrain"]["properties"]["training"]["properties"], True),
    (PretrainSettings, SCHEMA["pretrain"]["properties"]["models"]["additionalProperties"]["properties"], False),
]


@pytest.mark.parametrize("cls, properties, with_defaults", IN_SCHEMA, ids=lambda v: getattr(v, "__name__", ""))
def test_config_schema_is_the_settings_class(cls, properties, with_defaults):
    expected = declared.schema_properties(cls)
    if not with_defaults:
        expected = {name: {k: v for k, v in prop.items() if k != "default"} for name, prop in expected.items()}
    assert {name: properties[name] for name in expected} == expected
    extra = set(properties) - set(expected) - {"sources", "exclude_tasks"}  # the corpus' lists are not settings of a run
    assert not extra, f"schema keys without a setting: {extra}"


def _parser(cls):
    parser = argparse.ArgumentParser(exit_on_error=False)
    declared.add_arguments(parser, cls)
    return parser


@pytest.mark.parametrize("cls", [CorpusSettings, PretrainSettings])
def test_command_line_defaults_and_ranges_are_the_settings_class(cls):
    parser = _parser(cls)
    assert declared.from_namespace(cls, parser.parse_args([])) == cls()
    for f in dataclasses.fields(cls):
        meta = f.metadata
        flag = "--" + f.name.replace("_", "-")
        for key, outside in (("minimum", -1), ("exclusiveMinimum", 0), ("maximum", 1), ("exclusiveMaximum", 0)):
            bound = meta.get(key)
            if bound is None:
                continue
            value = bound + outside if key in ("minimum", "maximum") else bound
            value = bound - 1 if key == "minimum" else value
            with pytest.raises(argparse.ArgumentError):
                parser.parse_args([flag, str(value)])
            with pytest.raises(ValueError, match=f.name):
                declared.check(dataclasses.replace(cls(), **{f.name: value}))
        if meta.get("choices"):
            with pytest.raises(argparse.ArgumentError):
                parser.parse_args([flag, "not-a-choice"])


def test_a_setting_outside_its_range_is_named():
    with pytest.raises(ValueError, match="heldout_fraction must be less than 0.5; got 0.5"):
        declared.check(CorpusSettings(heldout_fraction=0.5))
    with pytest.raises(ValueError, match="objective must be one of masked, causal; got 'denoising'"):
        declared.check(PretrainSettings(objective="denoising"))
