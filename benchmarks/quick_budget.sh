#!/usr/bin/env bash
# Time the whole quick profile from a fresh clone, one paper after the other, and write the
# README's budget table.
#
#   bash benchmarks/quick_budget.sh            # clone HEAD to a temporary folder, run, update README.md
#   CORES=4 bash benchmarks/quick_budget.sh    # another core count
#   KEEP=/tmp/clone bash benchmarks/quick_budget.sh   # keep the clone (figures, logs) there
#
# Each `snakemake --cores $CORES <paper>_all` runs under `/usr/bin/time -v`, which gives its wall
# time, CPU time (user+sys, every child included) and peak memory; the papers run in sequence,
# so their wall times add up to the whole pipeline's (the data jobs run with the first paper).
# The clone uses this checkout's .venv (set VENV to use another) with the clone's own source
# on PYTHONPATH, so the code measured is exactly the committed HEAD. The table goes to
# benchmarks/quick_budget.md and between the budget markers of README.md.
set -euo pipefail

SRC=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
VENV=${VENV:-$SRC/.venv}
CORES=${CORES:-2}
PAPERS=${PAPERS:-minorfirst lesam eos bridges}
[ -x "$VENV/bin/snakemake" ] || { echo "no $VENV/bin/snakemake: run 'make test' (or set VENV) first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is needed: apt-get install time" >&2; exit 2; }

WORK=${KEEP:-$(mktemp -d)/clone}
rm -rf "$WORK"
git clone --quiet "$SRC" "$WORK"
COMMIT=$(git -C "$WORK" rev-parse --short HEAD)
export PYTHONPATH="$WORK/src"
mkdir -p "$WORK/timing"
cd "$WORK"

timings=()
for paper in $PAPERS; do
    echo "== $paper: snakemake --cores $CORES ${paper}_all (log: $WORK/timing/$paper.log)"
    status=0
    /usr/bin/time -v -o "timing/$paper.txt" "$VENV/bin/snakemake" --cores "$CORES" "${paper}_all" \
        > "timing/$paper.log" 2>&1 || status=$?
    grep -E "Elapsed|Maximum resident" "timing/$paper.txt" | sed 's/^\s*/   /'
    [ "$status" -eq 0 ] || echo "   FAILED (exit $status): see timing/$paper.log" >&2
    timings+=(--timing "$paper=timing/$paper.txt")
done

CPU=$(lscpu 2>/dev/null | sed -n 's/^Model name:\s*//p' | head -1)
PREAMBLE="Measured on $(date -u +%Y-%m-%d) by \`benchmarks/quick_budget.sh\` at commit $COMMIT: a fresh
clone, the quick profile, \`snakemake --cores $CORES <paper>_all\` for each paper in turn under
\`/usr/bin/time -v\`, on $(nproc) cores (${CPU:-unknown CPU}), $(free -g | awk '/Mem:/{print $2}') GB RAM, no GPU.
Wall time, CPU time (user+sys of every process) and peak RSS (the largest single process) come
from \`/usr/bin/time -v\`; the job counts, summed job wall times and slowest jobs come from the
rules' \`benchmark:\` files. The **all** row's wall time is the sum of the papers' runs."
"$VENV/bin/sharpness" budget "${timings[@]}" --preamble "$PREAMBLE" \
    --out "$SRC/benchmarks/quick_budget.md" --readme "$SRC/README.md"
echo "table written to $SRC/benchmarks/quick_budget.md and README.md"
