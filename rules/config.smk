# Config checks before anything is planned (isoflow.config_checks: a file's base merged under it, the JSON schema, the
# names and the own files). A mistake stops the workflow with one line per mistake, naming the config file, the field
# and the fix, instead of a traceback or a schema dump.

import os
import sys

from isoflow.config_checks import ConfigRefused, checked_config, load_workflow_schema

SCHEMA = os.path.join(workflow.basedir, "schemas", "config.schema.yaml")
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


try:
    _checked = checked_config(config, load_workflow_schema(SCHEMA), os.getcwd())
except ConfigRefused as refused:
    refuse(*refused.problems)
config.clear()
config.update(_checked)
