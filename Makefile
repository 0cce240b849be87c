# The two commands of the README. Both install first: pip once per checkout, Python and pins (pyproject.toml,
# constraints.txt), then a stamp under .make/ (ignored by git) says so, while isoflow imports from this checkout
# (pip's resolver took 30 s on every `make test`). `rm -r .make` installs again.
PYTHON ?= python3
PIP_INSTALL = $(PYTHON) -m pip install -q --disable-pip-version-check -c constraints.txt
INSTALL_STAMP = .make/install-$(shell $(PYTHON) -c 'import hashlib, sys; h = hashlib.sha256(sys.executable.encode()); [h.update(open(f, "rb").read()) for f in ("pyproject.toml", "constraints.txt")]; print(h.hexdigest()[:16])')

.PHONY: install wordnet run test test-fast lint generated benchmark pull reproduce report redraw diagnose-istar reproduce-finetune-diagnosis reproduce-istar-points example-own

install: wordnet
	@if [ -f $(INSTALL_STAMP) ] && $(PYTHON) -c 'import isoflow, sys; sys.exit(not isoflow.__file__.startswith("$(CURDIR)/"))' 2>/dev/null; then \
		echo "install: up to date ($(INSTALL_STAMP))"; \
	else \
		$(PIP_INSTALL) -e '.[workflow,models,test]' && rm -rf .make && mkdir -p .make && touch $(INSTALL_STAMP); \
	fi
	@# the package's bytecode, for a Python that writes none (PYTHONDONTWRITEBYTECODE, set on some machines): each
	@# process would compile the modules it imports again (a run of the suite starts some 400 Python processes)
	@$(PYTHON) -m compileall -q src >/dev/null

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
# TEST_WORKERS pytest-xdist processes (one torch thread each); the tests that read one built workflow run in one of
# them, after it is built there (tests/conftest.py: pytest_collection_modifyitems). TEST_WORKERS=0: one process.
# Three on 2 cores: a worker often waits (on a workflow's jobs, SLURM's polling, a subprocess), and a third fills those
# waits and gives each of the three built workflows a worker of its own (a clean clone on 2 Intel Xeon cores: pytest
# 602 s with 3, 635 s with 2).
TEST_WORKERS ?= 3
PYTEST = $(PYTHON) -m pytest -n $(TEST_WORKERS) --dist loadgroup
test: install lint
	$(PYTEST)

test-fast: install
	$(PYTEST) -m "not slow"

# ruff for the Python; for the workflow, Snakemake's own pair: its linter and snakefmt.
lint:
	$(PYTHON) -m ruff check src tests benchmarks scripts examples
	lint-imports   # the package's tiers (pyproject.toml, docs/architecture.md)
	snakefmt --check Snakefile rules/
	# Snakemake writes a log under .snakemake/ even when it only lints: removed again unless it was there before
	kept=$$(test -e .snakemake && echo yes); snakemake --lint --configfile $(RUN_CONFIG); rc=$$?; \
		test -n "$$kept" || rm -rf .snakemake; exit $$rc

# Every file written from the section registry (dvc.yaml, docs/README.md's glossary): after adding a section, a
# command, a module or a publication (the suite names this target when one is stale).
generated: install
	$(PYTHON) scripts/generate.py

# The metric step with the BLAS `auto` picks on this host, then with each one forced (about 25 minutes on 2 cores).
benchmark: install
	$(PYTHON) benchmarks/metrics.py
	ISOFLOW_CPU_GEMM=numpy $(PYTHON) benchmarks/metrics.py --out benchmarks/results/metrics-numpy-blas.json
	ISOFLOW_CPU_GEMM=torch $(PYTHON) benchmarks/metrics.py --out benchmarks/results/metrics-torch-blas.json

# Fetch the results shared through DVC for this commit (or say in one line why there is nothing to fetch), then give
# the restored files the mtimes of their place in the workflow: scripts/pull.py.
pull:
	@$(PYTHON) scripts/pull.py $(DVC_PULL_ARGS)

# docs/results/<publication>: a section of the workflow under its config (isoflow.sections.PUBLICATIONS: optimize,
# supersense-ablation, istar, nonlinear-head(-2), layers, finetune, finetune-longer, finetune-plain, stability,
# pretrain, training-dynamics), then its tables, figures and the
# runs they were made from copied to docs/results/<publication> (replaced as a whole, only on success; other
# publications are left as they are), by scripts/publish_results.py, which records the command in PUBLISHED.json.
# Hours on 2 CPU cores in all (far less on a GPU); resumable. `make reproduce` does every publication.
PUBLICATIONS = $(shell $(PYTHON) -c "from isoflow.sections import PUBLICATIONS; print(' '.join(PUBLICATIONS))" 2>/dev/null)
reproduce: $(addprefix reproduce-,$(PUBLICATIONS)) reproduce-finetune-diagnosis reproduce-istar-points

reproduce-%: install
	$(PYTHON) scripts/publish_results.py $* --reproduce --snakemake-args "$(SNAKEMAKE_ARGS)"

# A sweep in parts, on one machine after another (docs/workflow.md): save-partial-<publication> keeps the finished runs
# in partial-results/<publication> (commit them), with the models the workflow pretrained for them; resume-<publication>
# puts the models back (not trained again), then the runs and those already published, once their inputs are built,
# runs only the missing ones, publishes the whole and removes the saved runs. RERUN=1: a rerun in parts of a published
# section whose runs now measure more; the saved runs replace the published ones, which a resume then leaves out.
# training-dynamics is made in parts of one series each: whole series saved as their records, the missing ones made.
save-partial-%: install
	$(PYTHON) scripts/partial_runs.py save $* $(if $(RERUN),--rerun)

resume-%: install
	$(PYTHON) scripts/publish_results.py $* --reproduce --resume --snakemake-args "$(SNAKEMAKE_ARGS)"

# The HTML report of a finished workflow: every figure and table with its caption. By default that of the config whose
# run last finished (make run, make example-own, or snakemake with your own --configfile); another one with
# REPORT_CONFIG=path/to/config.yaml (e.g. config.yaml for the paper's).
REPORT_CONFIG ?= $(shell cat .snakemake/isoflow-last-config 2>/dev/null || echo $(RUN_CONFIG))
REPORT_DIR = $(shell $(PYTHON) -c "from isoflow.config_files import load; print(load('$(REPORT_CONFIG)').get('results_dir', 'results'))")
report:
	snakemake --configfile $(REPORT_CONFIG) --report $(REPORT_DIR)/report.html

# docs/results/finetune-diagnosis: the I-STAR penalty's gradient against the task loss's, and lambda = -1 under
# I-STAR's fine-tuning setup (isoflow.finetune.diagnosis; 20 minutes on 2 busy CPU cores).
# It has no report step: diagnosis.json is the measurement, so `make redraw` has nothing to redraw there.
reproduce-finetune-diagnosis: diagnose-istar
diagnose-istar: install
	isoflow finetune-diagnosis --data-dir data/reproduce-offline --raw-dir data/raw --mirror ../shared/data --out docs/results/finetune-diagnosis

# docs/results/istar-points: which points I-STAR's penalty should see on each model, at the pretrained model, before any
# training (isoflow.finetune.points_diagnosis; its table's caption holds the rule that picked the fair sweep's recipe).
# SST-2 and plain-bert come from config/reproduce-offline.yaml's workflow (plain-bert: about 45 min of pretraining on 2
# CPU cores, once), then about 6 minutes of forward and backward passes (points_diagnosis.json: each model's seconds).
DIAGNOSIS_DATA = data/reproduce-offline
reproduce-istar-points: install
	snakemake --cores 2 --configfile config/reproduce-offline.yaml $(DIAGNOSIS_DATA)/tasks/glue/sst2/meta.json $(DIAGNOSIS_DATA)/pretrained/plain-bert
	isoflow points-diagnosis --models smollm2-135m gemma3-270m minilm $(DIAGNOSIS_DATA)/pretrained/plain-bert --task glue/sst2 --batches 5 --data-dir $(DIAGNOSIS_DATA) --raw-dir data/raw --mirror ../shared/data --out docs/results/istar-points

# After a change to the report code only: the publications' tables and figures remade from their committed runs
# (istar-points: from its points_diagnosis.json, `isoflow points-diagnosis --report-only`)
# (the same `isoflow` report commands the workflow runs; minutes, not the hours of `make reproduce`).
redraw: install
	$(PYTHON) scripts/redraw_published.py

# Your own data, model folder, vectors and corpus through every section (examples/own/config.yaml: 27 jobs, about
# 280 CPU seconds): make_inputs.py stands in for what you bring (a tiny BERT folder, vectors made elsewhere).
example-own: install
	$(PYTHON) examples/own/make_inputs.py data/own-example
	snakemake --cores 2 --configfile examples/own/config.yaml
