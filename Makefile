# Two commands do everything on a fresh machine:
#   make demo   seed an embedded SQLite store with planted problems and dream it (offline)
#   make test   run the test suite (PostgreSQL tests skip when it is unreachable, unless CI is set)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.memctl-installed
PYTEST_ARGS ?= -n 2

.PHONY: demo test bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

DEMO_DIR ?= demo

demo: $(STAMP)
	$(VENV)/bin/memctl demo --dir $(DEMO_DIR)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) demo .pytest_cache .hypothesis dist build
