# The two commands of the README. Both install first (idempotent: fast when already installed).
PYTHON ?= python3
PIP_INSTALL = $(PYTHON) -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: install wordnet run test test-fast benchmark pull reproduce reproduce-ablation report

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
run: install
	snakemake --cores 2 --configfile config/offline.yaml $(if $(MIRROR),--config mirror=$(MIRROR))

test: install
	$(PYTHON) -m pytest

test-fast: install
	$(PYTHON) -m pytest -m "not slow"

benchmark: install
	$(PYTHON) benchmarks/metrics.py

# Fetch the results shared through DVC, then give the restored files the mtimes of their place in the workflow
# (`dvc pull` writes them in arbitrary order; without this Snakemake would plan to re-run jobs whose outputs are there).
CONFIGS = $(shell $(PYTHON) -c "import yaml; print(' '.join(c['config'] for c in yaml.safe_load(open('dvc-configs.yaml'))['configs'].values()))")
pull:
	dvc pull $(DVC_PULL_ARGS)
	for cfg in $(CONFIGS); do snakemake --touch --cores 1 --configfile $$cfg --quiet || exit 1; done

# docs/results: config/reproduce-offline.yaml through the workflow (several hours on 2 CPU cores; far less on a GPU),
# then its tables, figures, run lists, trajectories, layer analyses and fine-tuning records copied to docs/results
# (replaced as a whole, only on success).
REPRO = results/reproduce-offline
reproduce: install
	HF_HUB_OFFLINE=1 snakemake --cores 2 --configfile config/reproduce-offline.yaml --rerun-incomplete $(SNAKEMAKE_ARGS)
	rm -rf docs/results.new && mkdir -p docs/results.new
	cp -r $(REPRO)/tables $(REPRO)/figures $(REPRO)/trajectories docs/results.new/
	$(PYTHON) -c "import shutil; [shutil.copytree('$(REPRO)/' + d, 'docs/results.new/' + d, ignore=shutil.ignore_patterns('benchmarks', '.*')) for d in ('layers', 'finetune')]"
	cp $(REPRO)/aggregate/runs.csv docs/results.new/runs.csv
	cp $(REPRO)/aggregate/istar/runs.csv docs/results.new/runs_istar.csv
	rm -rf docs/results && mv docs/results.new docs/results

# The HTML report of a finished workflow: every figure and table with its caption (REPORT_CONFIG=config/offline.yaml
# for the quick start's).
REPORT_CONFIG ?= config.yaml
report:
	snakemake --configfile $(REPORT_CONFIG) --report $$($(PYTHON) -c "import yaml; print(yaml.safe_load(open('$(REPORT_CONFIG)')).get('results_dir', 'results'))")/report.html

# docs/results/supersense-ablation: config/supersense-ablation.yaml (dimension x word list of the supersense task).
ABLATION = results/supersense-ablation
reproduce-ablation: install
	HF_HUB_OFFLINE=1 snakemake --cores 2 --configfile config/supersense-ablation.yaml --rerun-incomplete $(SNAKEMAKE_ARGS)
	rm -rf docs/results/supersense-ablation.new && mkdir -p docs/results/supersense-ablation.new
	cp -r $(ABLATION)/tables $(ABLATION)/figures $(ABLATION)/trajectories docs/results/supersense-ablation.new/
	cp $(ABLATION)/aggregate/runs.csv docs/results/supersense-ablation.new/runs.csv
	rm -rf docs/results/supersense-ablation && mv docs/results/supersense-ablation.new docs/results/supersense-ablation
