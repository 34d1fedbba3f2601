# The README's two commands:
#   make        set up .venv (pinned stack + this package) and run the whole pipeline (quick profile)
#   make test   same set-up, then the offline test suite
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
CORES  ?= all
STAMP  := $(VENV)/.installed

.PHONY: all run test test-slow lint clean-results

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
	$(BIN)/python -m pytest -m "not slow" -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/snakemake --lint

clean-results:
	rm -rf results figures logs benchmarks/results .snakemake
