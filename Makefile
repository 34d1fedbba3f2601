# The README's two commands:
#   make        set up .venv (pinned stack + this package) and run the whole pipeline (quick profile)
#   make test   same set-up, then the offline test suite
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
CORES  ?= all
STAMP  := $(VENV)/.installed

.PHONY: all run test test-slow test-paper lint clean-results

all: run

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python envs/requirements.txt pyproject.toml
	$(BIN)/python -m pip install --quiet -r envs/requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not paper" -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -q

# the paper profile's whole DAG on synthetic data, every training capped at 2 steps
test-paper: $(STAMP)
	$(BIN)/python -m pytest -m paper -q -s

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/snakemake --lint

clean-results:
	rm -rf results figures logs benchmarks/results .snakemake
