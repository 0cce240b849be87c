# The two commands of the README. Both install first (idempotent: fast when already installed).
PYTHON ?= python3
PIP_INSTALL = $(PYTHON) -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: install wordnet run test test-fast lint benchmark pull reproduce reproduce-paper reproduce-istar reproduce-layers reproduce-finetune reproduce-stability reproduce-ablation reproduce-finetune-longer report redraw diagnose-istar example-own

install: wordnet
	$(PIP_INSTALL) -e '.[workflow,models,test]'

# WordNet 3.0 from Debian/Ubuntu when we may use apt; otherwise isoflow falls back to NLTK's wordnet.zip
# (through the mirror or NLTK's server) or to $$ISOFLOW_WORDNET.
wordnet:
	@if [ -f /usr/share/wordnet/index.noun ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wordnet-base wordnet-sense-index >/dev/null; \
	else \
		echo "note: WordNet 3.0 not installed system-wide; isoflow will use \$$ISOFLOW_WORDNET or NLTK's wordnet.zip"; \
	fi

# The main job: the scaled-down offline workflow (config/offline.yaml); the paper's setup is `snakemake --cores N`.
# Its raw files come from the mirror ../shared/data; elsewhere: `make run MIRROR=/path/to/mirror`.
MIRROR ?=
RUN_CONFIG ?= config/offline.yaml
run: install
	snakemake --cores 2 --configfile $(RUN_CONFIG) $(if $(MIRROR),--config mirror=$(MIRROR))

# The whole suite (pytest: tests/ and the metrics' docstring examples), after the linters.
test: install lint
	$(PYTHON) -m pytest

test-fast: install
	$(PYTHON) -m pytest -m "not slow"

# ruff for the Python; for the workflow, Snakemake's own pair: its linter and snakefmt.
lint:
	$(PYTHON) -m ruff check src tests benchmarks scripts examples
	snakefmt --check Snakefile rules/
	snakemake --lint --configfile $(RUN_CONFIG)

benchmark: install
	$(PYTHON) benchmarks/metrics.py
	ISOFLOW_CPU_GEMM=numpy $(PYTHON) benchmarks/metrics.py --out benchmarks/results/metrics-numpy-blas.json

# Fetch the results shared through DVC, then give the restored files the mtimes of their place in the workflow
# (`dvc pull` writes them in arbitrary order; without this Snakemake would plan to re-run jobs whose outputs are there).
CONFIGS = $(shell $(PYTHON) -c "import yaml; print(' '.join(c['config'] for c in yaml.safe_load(open('dvc-configs.yaml'))['configs'].values()))")
pull:
	dvc pull $(DVC_PULL_ARGS)
	for cfg in $(CONFIGS); do snakemake --touch --cores 1 --configfile $$cfg --quiet || exit 1; done

# docs/results/<section>: config/reproduce-offline.yaml through the workflow, one section at a time (several hours on
# 2 CPU cores in all; far less on a GPU), then that section's tables, figures and the runs they were made from copied
# to docs/results/<section> by scripts/publish_results.py (replaced as a whole, only on success; other sections are
# left as they are). `make reproduce` does every section and the supersense ablation.
REPRO = results/reproduce-offline
REPRO_CONFIG = config/reproduce-offline.yaml
TARGET_paper = correlations
TARGET_istar = istar
TARGET_layers = layers
TARGET_finetune = finetune
TARGET_stability = stability
reproduce: reproduce-paper reproduce-istar reproduce-layers reproduce-finetune reproduce-stability reproduce-ablation reproduce-finetune-longer

# One command string, run and recorded as is (PUBLISHED.json), so the record cannot drift from what ran.
REPRO_RUN = $(strip snakemake $(TARGET_$*) --cores 2 --configfile $(REPRO_CONFIG) --rerun-incomplete $(SNAKEMAKE_ARGS))
reproduce-paper reproduce-istar reproduce-layers reproduce-finetune reproduce-stability: reproduce-%: install
	HF_HUB_OFFLINE=1 $(REPRO_RUN)
	$(PYTHON) scripts/publish_results.py $* $(REPRO) docs/results/$* --made-by "$(REPRO_RUN)"

# The HTML report of a finished workflow: every figure and table with its caption. By default that of what `make run`
# made; REPORT_CONFIG=config.yaml for the paper's.
REPORT_CONFIG ?= $(RUN_CONFIG)
REPORT_DIR = $(shell $(PYTHON) -c "import yaml; print(yaml.safe_load(open('$(REPORT_CONFIG)')).get('results_dir', 'results'))")
report:
	snakemake --configfile $(REPORT_CONFIG) --report $(REPORT_DIR)/report.html

# docs/results/supersense-ablation: config/supersense-ablation.yaml (dimension x word list of the supersense task).
ABLATION = results/supersense-ablation
ABLATION_RUN = $(strip snakemake correlations --cores 2 --configfile config/supersense-ablation.yaml --rerun-incomplete $(SNAKEMAKE_ARGS))
reproduce-ablation: install
	HF_HUB_OFFLINE=1 $(ABLATION_RUN)
	$(PYTHON) scripts/publish_results.py paper $(ABLATION) docs/results/supersense-ablation --made-by "$(ABLATION_RUN)"

# docs/results/finetune-longer: config/finetune-longer.yaml (SST-2, lambda in {-1, 0}, 4 epochs instead of 2).
LONGER = results/finetune-longer
LONGER_RUN = $(strip snakemake finetune --cores 2 --configfile config/finetune-longer.yaml --rerun-incomplete $(SNAKEMAKE_ARGS))
reproduce-finetune-longer: install
	HF_HUB_OFFLINE=1 $(LONGER_RUN)
	$(PYTHON) scripts/publish_results.py finetune $(LONGER) docs/results/finetune-longer --made-by "$(LONGER_RUN)"

# docs/results/finetune-diagnosis: the I-STAR penalty's gradient against the task loss's, and lambda = -1 under
# I-STAR's fine-tuning setup (scripts/istar_diagnosis.py; 20 minutes on 2 busy CPU cores).
diagnose-istar: install
	$(PYTHON) scripts/istar_diagnosis.py --data-dir data/reproduce-offline --raw-dir data/raw --mirror ../shared/data --out docs/results/finetune-diagnosis

# After a change to the report code only: the committed sections' tables and figures remade from their committed runs
# (the same `isoflow` report commands the workflow runs; minutes, not the hours of `make reproduce`).
redraw: install
	$(PYTHON) scripts/redraw_published.py

# Your own data, model folder, vectors and corpus through every section (examples/own/config.yaml, about 75 s on
# 2 CPU cores): make_inputs.py stands in for what you bring (a tiny BERT folder, vectors made elsewhere).
example-own: install
	$(PYTHON) examples/own/make_inputs.py data/own-example
	snakemake --cores 2 --configfile examples/own/config.yaml
