#!/usr/bin/env bash
# Time a whole profile from a fresh clone and write its budget table (the measurement the
# README's `budget-<profile>` and `profiles` blocks show).
#
#   bash benchmarks/quick_budget.sh            # clone HEAD to a temporary folder, run, update README.md
#   PROFILE=evidence bash benchmarks/quick_budget.sh  # the evidence profile (workflow/config/evidence.yaml)
#   CORES=4 bash benchmarks/quick_budget.sh    # another core count
#   KEEP=/tmp/clone bash benchmarks/quick_budget.sh   # keep the clone (figures, logs) there
#   PER_PAPER=1 bash benchmarks/quick_budget.sh       # one run per paper, in sequence
#   TARGETS=bridges_all NO_README=1 bash benchmarks/quick_budget.sh   # a smoke run of part of it
#   SNAKEMAKE_ARGS=--keep-going bash benchmarks/quick_budget.sh  # extra snakemake arguments
#
# By default the whole profile is one `snakemake --cores $CORES` run (what `make` does) under
# `/usr/bin/time -v`, which gives its wall time, CPU time (user+sys, every child included) and
# peak memory: the **all** row. The per-paper rows come from the rules' benchmark files. With
# PER_PAPER=1 each `snakemake --cores $CORES <paper>_all` runs under its own `/usr/bin/time -v`
# in sequence, so every paper gets its own wall/CPU/memory; their wall times add up to more than
# one run's, because the last jobs of each paper leave cores idle that the next paper's jobs
# would have used (the data jobs run with the first paper).
# The clone uses this checkout's .venv (set VENV to use another) with the clone's own source
# on PYTHONPATH, so the code measured is exactly the committed HEAD. The table goes to
# benchmarks/measured/<profile>_budget.md (commit it) and, through `sharpness readme refresh`,
# into the README's `budget-<profile>` and `profiles` blocks.
set -euo pipefail

SRC=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
VENV=${VENV:-$SRC/.venv}
CORES=${CORES:-2}
PROFILE=${PROFILE:-quick}
CONFIG=()
[ "$PROFILE" = quick ] || CONFIG=(--configfile "workflow/config/$PROFILE.yaml")
# shellcheck disable=SC2206  # SNAKEMAKE_ARGS is a list of words
CONFIG+=(${SNAKEMAKE_ARGS:-})
PAPERS=${PAPERS:-minorfirst lesam eos bridges}
[ -x "$VENV/bin/snakemake" ] || { echo "no $VENV/bin/snakemake: run 'make test' (or set VENV) first" >&2; exit 2; }
if [ -f "$VENV/.installed" ] && [ "$SRC/envs/requirements.txt" -nt "$VENV/.installed" ]; then
    echo "$VENV is older than envs/requirements.txt: run 'make .venv/.installed' first" >&2; exit 2
fi
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is needed: apt-get install time" >&2; exit 2; }

WORK=${KEEP:-$(mktemp -d)/clone}
rm -rf "$WORK"
git clone --quiet "$SRC" "$WORK"
COMMIT=$(git -C "$WORK" rev-parse --short HEAD)
export PYTHONPATH="$WORK/src"
mkdir -p "$WORK/timing"
cd "$WORK"

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
timings=()
if [ -z "${PER_PAPER:-}" ]; then
    echo "== whole $PROFILE profile: snakemake --cores $CORES ${TARGETS:-} (log: $WORK/timing/all.log)"
    status=0
    # shellcheck disable=SC2086  # TARGETS is a list of words
    /usr/bin/time -v -o "timing/all.txt" "$VENV/bin/snakemake" ${TARGETS:-} --cores "$CORES" "${CONFIG[@]}" \
        > "timing/all.log" 2>&1 || status=$?
    grep -E "Elapsed|Maximum resident" "timing/all.txt" | sed 's/^\s*/   /'
    [ "$status" -eq 0 ] || echo "   FAILED (exit $status): see timing/all.log" >&2
    timings+=(--timing "all=timing/all.txt")
    PAPERS=""
    HOW="\`snakemake --cores $CORES\` (every job in one run, as \`make\` does)"
    ROWS="The **all** row's wall time, CPU time and peak RSS are that run's; the per-paper rows
come from the rules' \`benchmark:\` files (job counts, summed job wall times, slowest jobs)."
else
    HOW="\`snakemake --cores $CORES <paper>_all\` for each paper in turn"
    ROWS="Wall time, CPU time (user+sys of every process) and peak RSS (the largest single process) come
from \`/usr/bin/time -v\`; the job counts, summed job wall times and slowest jobs come from the
rules' \`benchmark:\` files. The **all** row's wall time is the sum of the papers' runs."
fi
for paper in $PAPERS; do
    echo "== $paper: snakemake --cores $CORES ${paper}_all (log: $WORK/timing/$paper.log)"
    status=0
    /usr/bin/time -v -o "timing/$paper.txt" "$VENV/bin/snakemake" "${paper}_all" --cores "$CORES" "${CONFIG[@]}" \
        > "timing/$paper.log" 2>&1 || status=$?
    grep -E "Elapsed|Maximum resident" "timing/$paper.txt" | sed 's/^\s*/   /'
    [ "$status" -eq 0 ] || echo "   FAILED (exit $status): see timing/$paper.log" >&2
    timings+=(--timing "$paper=timing/$paper.txt")
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)  # other work sharing the cores shows here
CPU=$(lscpu 2>/dev/null | sed -n 's/^Model name:\s*//p' | head -1)
PREAMBLE="Measured on $(date -u +%Y-%m-%d) by \`benchmarks/quick_budget.sh\` at commit $COMMIT: a fresh
clone, the $PROFILE profile, $HOW under \`/usr/bin/time -v\`, on $(nproc) cores
(${CPU:-unknown CPU}), $(free -g | awk '/Mem:/{print $2}') GB RAM, no GPU, load average before the run
$LOAD, after it $LOAD_AFTER. $ROWS"
PARTS=(--parts "$WORK/benchmarks/quick_parts.yaml" --cores "$CORES")  # where the job time goes
if [ -n "${NO_README:-}" ]; then
    "$VENV/bin/sharpness" budget "${timings[@]}" "${PARTS[@]}" --preamble "$PREAMBLE"
else
    "$VENV/bin/sharpness" budget "${timings[@]}" "${PARTS[@]}" --preamble "$PREAMBLE" \
        --out "$SRC/benchmarks/measured/${PROFILE}_budget.md"
    (cd "$SRC" && PYTHONPATH="$SRC/src" "$VENV/bin/sharpness" readme refresh \
        --only "budget-$PROFILE" --only profiles)
    echo "table written to $SRC/benchmarks/measured/${PROFILE}_budget.md and README.md"
fi
