# The README's two commands:
#   make        set up .venv (pinned stack + this package) and run the whole pipeline (quick profile)
#   make test   same set-up, then the fast tier of the offline tests (no workflow plans)
#   make CONFIG=my.yaml   the pipeline with your config merged over the default profile, after
#               `sharpness config check` has read it as plain data and checked it (a config
#               from elsewhere must never reach Snakemake unchecked: docs/security.md)
# Test tiers (pytest markers; CONTRIBUTING.md says what goes where; .ci/run runs all but slow):
#   make test           unit and integration tests: not slow, paper, workflow or e2e
#   make test-workflow  end-to-end tests (marker `e2e`: a whole figure, table or ledger built,
#                       a command in a fresh interpreter), then plans and runs of the Snakemake
#                       workflow, README commands, concurrency and kill tests (marker `workflow`)
#   make test-slow      long tests (marker `slow`)
#   make test-paper     the paper profile's whole DAG on synthetic data (marker `paper`)
# Shell safety (docs/security.md, "The Makefile"): every variable that can carry a file name or a
# value reaches the shell as one single-quoted word ($(call q,...)). Make itself expands `$(...)`
# inside a variable's value wherever the value is used, so CONFIG and GPU_HOURS (values that may
# come from elsewhere) are read with $(value ...), never expanded, and no variable the user sets
# is exported to a recipe's environment (exporting would expand it too).
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
CORES  ?= all
CONFIG ?=
STAMP  := $(VENV)/.installed
unexport PYTHON VENV BIN CORES CONFIG GPU_HOURS TINY MAX_WALL
# one shell word: '...' with each ' inside written as '\''
q = '$(subst ','\'',$(1))'
PY      := $(call q,$(BIN)/python)
CONFIGQ := $(call q,$(value CONFIG))

.PHONY: all run test test-workflow test-slow test-paper lint clean-results gpu-campaign

all: run

$(BIN)/python:
	$(call q,$(PYTHON)) -m venv $(call q,$(VENV))

$(STAMP): $(BIN)/python envs/requirements.txt pyproject.toml
	$(PY) -m pip install --quiet -r envs/requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(call q,$(STAMP))

run: $(STAMP)
ifneq ($(strip $(value CONFIG)),)
	$(call q,$(BIN)/sharpness) config check $(CONFIGQ)
	$(call q,$(BIN)/snakemake) --cores $(call q,$(CORES)) --configfile $(CONFIGQ)
else
	$(call q,$(BIN)/snakemake) --cores $(call q,$(CORES))
endif

test: $(STAMP)
	$(PY) -m pytest -m "not slow and not paper and not workflow and not e2e" -q -n auto

# the second tier: end-to-end tests on every core, then the workflow's tests one at a time
# (they plan and run Snakemake in shared checkouts, and start and kill processes)
test-workflow: $(STAMP)
	$(PY) -m pytest -m "e2e and not workflow and not slow and not paper" -q -n auto
	$(PY) -m pytest -m "workflow and not slow and not paper" -q

test-slow: $(STAMP)
	$(PY) -m pytest -m slow -q

# the paper profile's whole DAG on synthetic data, every training capped at 2 steps
test-paper: $(STAMP)
	$(PY) -m pytest -m paper -q -s

# A GPU budget in one command (sharpness campaign): preflight, step times measured on the GPU,
# the plan, Snakemake with GPU packing and a watchdog at the budget. TINY=1: the same path on
# the CPU with the quick profile (a check, not a price). MAX_WALL=4h: the allocation's wall
# time (stop cleanly before it; the same command again continues).
GPU_HOURS ?=
gpu-campaign: $(STAMP)
	@test -n $(call q,$(value GPU_HOURS)) || { echo "make gpu-campaign: give GPU_HOURS=N (the budget)"; exit 2; }
	$(call q,$(BIN)/sharpness) campaign --gpu-hours $(call q,$(value GPU_HOURS)) --cores $(call q,$(CORES)) $(if $(value TINY),--tiny,) $(if $(value MAX_WALL),--max-wall $(call q,$(value MAX_WALL)),)

lint: $(STAMP)
	$(call q,$(BIN)/ruff) check .
	$(call q,$(BIN)/snakemake) --lint

clean-results:
	rm -rf results figures logs benchmarks/results .snakemake
