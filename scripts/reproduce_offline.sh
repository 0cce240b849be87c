#!/usr/bin/env bash
# The offline reproduction behind the README's results: config/reproduce-offline.yaml through the workflow
# (~75 min on 2 CPU cores), then its tables, figures and trajectories copied to docs/results.
#   bash scripts/reproduce_offline.sh [extra snakemake options]
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
snakemake --cores "${CORES:-2}" --configfile config/reproduce-offline.yaml "$@"
out=results/reproduce-offline
rm -rf docs/results.new && mkdir -p docs/results.new
cp -r "$out/tables" "$out/figures" "$out/trajectories" docs/results.new/
rm -rf docs/results && mv docs/results.new docs/results
