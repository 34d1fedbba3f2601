# The README's two commands:
#   make        set up .venv (pinned stack + this package) and run the whole pipeline (quick profile)
#   make test   same set-up, then the fast tier of the offline tests (no workflow plans)
#   make CONFIG=my.yaml   the pipeline with your config merged over the default profile, after
#               `sharpness config check` has read it as plain data and checked it (a config
#               from elsewhere must never reach Snakemake unchecked: docs/security.md)
# Test tiers (pytest markers; CONTRIBUTING.md says what goes where; .ci/run runs the first two):
#   make test           unit and integration tests: not slow, not paper, not workflow
#   make test-workflow  plans and runs of the Snakemake workflow, README commands, concurrency
#                       and kill tests (marker `workflow`)
#   make test-slow      long tests (marker `slow`)
#   make test-paper     the paper profile's whole DAG on synthetic data (marker `paper`)
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
CORES  ?= all
CONFIG ?=
STAMP  := $(VENV)/.installed

.PHONY: all run test test-workflow test-slow test-paper lint clean-results gpu-campaign

all: run

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python envs/requirements.txt pyproject.toml
	$(BIN)/python -m pip install --quiet -r envs/requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
ifneq ($(strip $(CONFIG)),)
	$(BIN)/sharpness config check $(CONFIG)
	$(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG)
else
	$(BIN)/snakemake --cores $(CORES)
endif

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not paper and not workflow" -q -n auto

test-workflow: $(STAMP)
	$(BIN)/python -m pytest -m "workflow and not slow and not paper" -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -q

# the paper profile's whole DAG on synthetic data, every training capped at 2 steps
test-paper: $(STAMP)
	$(BIN)/python -m pytest -m paper -q -s

# A GPU budget in one command (sharpness campaign): preflight, step times measured on the GPU,
# the plan, Snakemake with GPU packing and a watchdog at the budget. TINY=1: the same path on
# the CPU with the quick profile (a check, not a price).
GPU_HOURS ?=
gpu-campaign: $(STAMP)
	@test -n "$(GPU_HOURS)" || { echo "make gpu-campaign: give GPU_HOURS=N (the budget)"; exit 2; }
	$(BIN)/sharpness campaign --gpu-hours $(GPU_HOURS) --cores $(CORES) $(if $(TINY),--tiny,)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/snakemake --lint

clean-results:
	rm -rf results figures logs benchmarks/results .snakemake
