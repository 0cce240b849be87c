# The two commands of the README. Both install first (idempotent: fast when already installed).
PYTHON ?= python3
PIP_INSTALL = $(PYTHON) -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: install run test test-fast benchmark

install:
	$(PIP_INSTALL) -e '.[workflow,test]'

# The main job. Until the workflow lands (Snakefile), it measures the metrics against their references.
run: install
	$(PYTHON) benchmarks/metrics.py

test: install
	$(PYTHON) -m pytest

test-fast: install
	$(PYTHON) -m pytest -m "not slow"

benchmark: install
	$(PYTHON) benchmarks/metrics.py
