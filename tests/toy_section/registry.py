"""The toy section's entry in the registry: what its author appends to src/isoflow/sections.py (below this import,
which only lets this file be read alone)."""

from isoflow.sections import PUBLICATIONS, SECTIONS, Publication, Section

SECTIONS["toy"] = Section(
    "toy",
    "A toy section",
    ("toy",),
    ("toy-report",),
    commands_package="isoflow.toy.cli",
    settings="isoflow.toy.settings.ToySettings",
    run_rules=("toy_run",),
    report_rules=("toy_report",),
    config_keys=("toy",),
    library=("isoflow.toy",),
)
PUBLICATIONS["toy"] = Publication("toy", "toy", "config/toy.yaml")
