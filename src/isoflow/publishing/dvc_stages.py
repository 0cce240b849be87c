"""Write dvc.yaml from the section registry (isoflow.sections): the shared data stages (prepare, encode), one stage per
section that makes runs, and one report stage, each for every config of dvc-configs.yaml (``foreach``).

    python scripts/generate.py              # rewrites dvc.yaml; tests/test_dvc.py checks that it is up to date

A stage runs its Snakemake target with only its own rules allowed (files restored by `dvc pull` carry arbitrary
mtimes, which must not make one stage re-run another's jobs), depends on the isoflow files its commands import
(isoflow.publishing.stage_modules), on the rule files that define its rules, on the config keys its runs read and on the
folders they read, and outputs the section's folders."""

from __future__ import annotations

import re
import sys

import yaml

from ..sections import SECTIONS
from . import ROOT
from .stage_modules import dep_entries

HEADER = """\
# Written by scripts/generate.py from the section registry (src/isoflow/sections.py): edit those, not this file.
# DVC stages over the Snakemake workflow: the shared data (prepare, encode), one stage per section that makes runs,
# and the report, each for every config of dvc-configs.yaml, so `dvc repro` re-runs only the steps whose code, config
# values or inputs changed, and `dvc push` / `dvc pull` share every result.
# Each stage runs a Snakemake target; extra Snakemake options come from $ISOFLOW_SNAKEMAKE, e.g.
#   ISOFLOW_SNAKEMAKE="--profile slurm" dvc repro         # on a SLURM login node
#   ISOFLOW_SNAKEMAKE="--resources gpu=1" dvc repro       # on a GPU box
# Each stage lets Snakemake run only its own rules (--allowed-rules): files restored by `dvc pull` carry arbitrary
# mtimes, which must not make one stage re-run another stage's jobs.
"""
ITEM = {"data": "${item.data}", "results": "${item.results}"}


def rule_files(rules: list[str], _seen: frozenset = frozenset()) -> list[str]:
    """The rule files that define these rules (``rule X:`` or ``use rule ... as X``), each followed by those of the
    rules it copies (``use rule Y as X``: Y's file, this one or another), after common.smk and the input functions
    (rules/inputs/: they cross sections)."""
    found = ["rules/common.smk", "rules/inputs"]
    seen = _seen | set(rules)  # a rule copied from its own file is not looked for again
    for path in sorted((ROOT / "rules").glob("*.smk")):
        text = path.read_text()
        if any(re.search(rf"^(rule {r}:|use rule \w+ as {r} )", text, re.M) for r in rules):
            name = f"rules/{path.name}"
            if name not in found:
                found.append(name)
            used = [u for u in re.findall(r"^use rule (\w+) as", text, re.M) if u not in seen]
            found += [f for f in rule_files(used, seen)[2:] if f not in found] if used else []
    return found


def stage(target: str, rules: list[str], commands_of: str, *, inputs=(), params=(), outs=()) -> dict:
    allowed = " ".join([target, *rules])
    cmd = f"snakemake {target} --cores all --configfile ${{item.config}} --allowed-rules {allowed} $ISOFLOW_SNAKEMAKE"
    do = {"cmd": cmd, "deps": [*inputs, *dep_entries(commands_of), *rule_files(rules)]}
    if params:
        do["params"] = [{"${item.config}": list(params)}]
    do["outs"] = list(outs)
    return {"foreach": "${configs}", "do": do}


# The config values that say which task x model pairs are encoded (rules: all_task_model_pairs, the optimize and istar
# sections') and which tasks are prepared (those pairs' tasks, a word task with its static model's vocabulary, and
# fine-tuning's tasks).
ENCODED_PAIRS = ("optimize.pairs", "optimize.glue", "istar.tasks", "istar.models")
PREPARED_TASKS = ("optimize.pairs", "optimize.glue.tasks", "istar.tasks", "istar.models", "finetune.tasks")


def stages() -> dict:
    out = {
        "prepare": stage("datasets", ["prepare"], "prepare", params=PREPARED_TASKS, outs=("${item.data}/tasks",)),
        "encode": stage(
            "embeddings",
            ["encode"],
            "encode",
            inputs=("${item.data}/tasks",),
            params=ENCODED_PAIRS,
            outs=("${item.data}/embeddings",),
        ),
    }
    report_inputs, report_outputs, report_rules, keys = [], [], [], []
    for s in SECTIONS.values():
        if s.run_rules:
            outs = s.paths(s.run_outputs, **ITEM)
            out[s.name] = stage(
                s.runs_target,
                list(s.run_rules),
                s.name,
                inputs=s.paths(s.run_inputs, **ITEM),
                params=s.config_keys,
                outs=outs,
            )
            report_inputs += [o for o in outs if not o.endswith("/benchmarks")]
        report_outputs += s.paths(s.report_outputs, **ITEM)
        report_rules += list(s.report_rules)
        keys += [k for k in s.config_keys if not s.run_rules and k not in keys]  # report-only sections' settings
    out["report"] = stage("all", report_rules, "report", inputs=report_inputs, params=keys, outs=report_outputs)
    return out


def render() -> str:
    body = yaml.safe_dump({"vars": ["dvc-configs.yaml"], "stages": stages()}, sort_keys=False, width=200)
    return HEADER + body


def main() -> int:
    (ROOT / "dvc.yaml").write_text(render())
    print("dvc.yaml written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
