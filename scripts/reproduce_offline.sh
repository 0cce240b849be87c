#!/usr/bin/env bash
# The offline reproduction behind the README's results (issue 4): what this machine can run without internet.
# Sequential by design (a 2-core machine); ~75 min on 2 CPU cores. The Snakemake workflow supersedes this script.
#   ISOFLOW_MIRROR=../shared/data SEEDS="0 1" bash scripts/reproduce_offline.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ISOFLOW_MIRROR:?set ISOFLOW_MIRROR to the directory holding the raw files}"
export ISOFLOW_MIRROR HF_HUB_OFFLINE=1
SEEDS=${SEEDS:-"0 1"}
for t in polarity snli glue/cola glue/sst2 glue/mrpc glue/rte glue/wnli; do
  isoflow prepare "$t" --quiet
  isoflow encode --model minilm --dataset "$t" --quiet
done
for t in supersense pos-wordnet; do
  isoflow prepare "$t" --vocab glove-50d --quiet
  isoflow encode --model glove-50d --dataset "$t" --quiet
done
for s in $SEEDS; do
  for t in supersense pos-wordnet; do isoflow optimize --task "$t" --model glove-50d --seed "$s" --quiet; done
  for t in glue/wnli glue/rte glue/mrpc glue/cola glue/sst2; do isoflow optimize --task "$t" --model minilm --seed "$s" --quiet; done
  for t in polarity snli; do isoflow optimize --task "$t" --model minilm --seed "$s" --quiet; done
done
isoflow analyze --results results --out docs/results
# The trajectories behind the committed tables (small: ~40 kB a run).
rm -rf docs/results/trajectories && cp -r results/trajectories docs/results/
