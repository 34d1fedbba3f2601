#!/usr/bin/env bash
# Time both test tiers, `make test` and `make test-workflow` (each of its pytest calls), from a
# fresh clone and write benchmarks/measured/test_suite.md, which the `test-suite` block of
# docs/performance.md and the README's `two-commands` block show.
#
#   bash benchmarks/time_test_suite.sh
#
# The clone is of this checkout's HEAD (commit first). It builds its own .venv with `make`'s
# set-up (pip, the pinned stack from envs/requirements.txt, the package editable), so the
# timing is what a newcomer sees. Run it on an idle machine.
#
# Environment:
#   REUSE_VENV=DIR  use the venv DIR instead of building one (faster; the clone's source goes
#                   first on PYTHONPATH, so the code timed is still the committed HEAD; the file
#                   says so)
#   SELECT="ARGS"   pytest arguments that narrow both tiers (paths, -k EXPR): a trial of this
#                   script; the file is then headed PARTIAL and is no measurement of the suite
#   BASELINE=N      the number of tests `-m "not slow and not paper"` collected before the
#                   suite was split in two tiers (default: 1058, at commit d98c8ee)
#   OUT=FILE        write there instead (the README is then left alone): for trials
#   PYTEST_ARGS=".." added to both tiers' pytest and named in the file (e.g. "-n 2" to time
#                   pytest-xdist, which the venv must then hold)
set -euo pipefail

SRC=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
BASELINE=${BASELINE:-1058}
BASELINE_AT=d98c8ee
SELECT=${SELECT:-}
PYTEST_ARGS=${PYTEST_ARGS:-}
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is needed: apt-get install time" >&2; exit 2; }

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d)
WORK=$TMP/clone
git clone --quiet "$SRC" "$WORK"
COMMIT=$(git -C "$WORK" rev-parse --short HEAD)
cd "$WORK"

if [ -n "${REUSE_VENV:-}" ]; then
    PY="$REUSE_VENV/bin/python"
    [ -x "$PY" ] || { echo "no $PY" >&2; exit 2; }
    export PYTHONPATH="$WORK/src"
    VENV_NOTE="the venv at REUSE_VENV reused, the clone's source first on PYTHONPATH"
else
    echo "building the clone's .venv (make's set-up) ..." >&2
    make --no-print-directory .venv/.installed >&2
    PY="$WORK/.venv/bin/python"
    VENV_NOTE="its own .venv built by \`make\`"
fi

# each pytest call of the two tiers, exactly the Makefile's: `make test` is one call;
# `make test-workflow` is two, its end-to-end tests on every core, then the workflow's one at a time
PARTS=(test test-workflow test-workflow)
MARKS=("not slow and not paper and not workflow and not e2e"
       "e2e and not workflow and not slow and not paper"
       "workflow and not slow and not paper")
ARGS=("-n auto" "-n auto" "")
# shellcheck disable=SC2086  # SELECT is a list of pytest arguments
COLLECTED=$("$PY" -m pytest --collect-only -q -p no:cacheprovider -m "not slow and not paper" \
    $SELECT 2>/dev/null | tail -1 | grep -oE "^[0-9]+" || echo "?")

status=0
ROWS=""
SLOWEST=""
TOTAL=0
for i in "${!PARTS[@]}"; do
    tier=${PARTS[$i]}
    mark=${MARKS[$i]}
    tier_args=${ARGS[$i]}
    # shellcheck disable=SC2086
    /usr/bin/time -v -o "time-$i.txt" "$PY" -m pytest -m "$mark" -q -p no:cacheprovider \
        --durations=15 $tier_args $PYTEST_ARGS $SELECT > "pytest-$i.log" 2>&1 || status=$?
    summary=$(grep -E "^=* ?[0-9]+ (passed|failed|skipped|deselected|error)" "pytest-$i.log" \
              | tail -1 | sed -E 's/^=+ //; s/ =+$//')
    counts=${summary% in *}
    pytime=${summary##* in }
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "time-$i.txt")
    cpu=$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/ { s += $2 }
                      END { printf "%.1f", s }' "time-$i.txt")
    ran=$(echo "$counts" | grep -oE "[0-9]+ (passed|failed|skipped|xfailed|xpassed|error)" \
          | awk '{ s += $1 } END { print s + 0 }')
    TOTAL=$((TOTAL + ran))
    ROWS+="| \`make $tier\` | \`-m \"$mark\"${tier_args:+ $tier_args}\` | ${counts:-no result} | ${pytime:-?} | $wall | $cpu |"$'\n'
    SLOWEST+=$'\n'"Slowest 15 of \`-m \"$mark\"\` (pytest \`--durations=15\`):"$'\n\n'"| seconds | phase | test |"$'\n'"|---:|---|---|"$'\n'
    SLOWEST+=$(sed -n '/slowest 15 durations/,/^$/p' "pytest-$i.log" \
               | grep -E "^[0-9.]+s " | awk '{ t = $1; sub(/s$/, "", t); printf "| %s | %s | `%s` |\n", t, $2, $3 }')
    SLOWEST+=$'\n'
done

CPU=$(lscpu 2>/dev/null | sed -n 's/^Model name:\s*//p' | head -1)
if [ -n "$SELECT" ]; then
    HEAD="PARTIAL RUN, not a measurement of the suite (only \`$SELECT\`). "
else
    HEAD=""
fi
MEASURED="$SRC/benchmarks/measured/test_suite.md"
OUT=${OUT:-$MEASURED}
{
    echo "${HEAD}Measured on $(date -u +%Y-%m-%d) by \`benchmarks/time_test_suite.sh\` at commit $COMMIT:"
    echo "a fresh clone ($VENV_NOTE), each tier's pytest${PYTEST_ARGS:+ with \`$PYTEST_ARGS\`} under \`/usr/bin/time -v\` on $(nproc)"
    echo "cores (${CPU:-unknown CPU}), no GPU, load average before the run $LOAD."
    echo
    echo "| tier | selects | result | pytest time | wall (h:mm:ss) | CPU s (user+sys) |"
    echo "|---|---|---|---:|---:|---:|"
    printf "%s" "$ROWS"
    echo
    echo "Tests run by the two tiers together: $TOTAL (\`-m \"not slow and not paper\"\` collects"
    echo "$COLLECTED here); before the suite was split in two tiers it collected $BASELINE (commit"
    echo "$BASELINE_AT): $( [ "$TOTAL" -ge "$BASELINE" ] && echo "none lost" || echo "FEWER THAN BEFORE")."
    printf "%s" "$SLOWEST"
} > "$OUT"
cat "$OUT"
if [ "$OUT" = "$MEASURED" ]; then
    cd "$SRC" && PYTHONPATH="$SRC/src" "${REUSE_VENV:-$SRC/.venv}/bin/sharpness" readme refresh \
        --only test-suite
fi
rm -rf "$TMP"
exit "$status"
