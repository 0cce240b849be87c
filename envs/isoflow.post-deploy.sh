#!/usr/bin/env bash
# Run by Snakemake inside the new conda env, from the repository root: install isoflow with the verified pins.
set -euo pipefail
python -m pip install --disable-pip-version-check -c constraints.txt -e '.[workflow,models]'
