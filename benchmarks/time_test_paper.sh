#!/usr/bin/env bash
# Time `make test-paper` (the paper profile's whole DAG on synthetic data) from a fresh clone
# and write benchmarks/measured/test_paper.md, which the README's `test-paper` block shows.
#
#   bash benchmarks/time_test_paper.sh
#
# The clone uses this checkout's .venv (set VENV to use another; `make` would build its own)
# with the clone's source on PYTHONPATH, so the code timed is exactly the committed HEAD.
set -euo pipefail

SRC=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
VENV=${VENV:-$SRC/.venv}
[ -x "$VENV/bin/python" ] || { echo "no $VENV/bin/python: run 'make test' (or set VENV) first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is needed: apt-get install time" >&2; exit 2; }

WORK=$(mktemp -d)/clone
git clone --quiet "$SRC" "$WORK"
COMMIT=$(git -C "$WORK" rev-parse --short HEAD)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
cd "$WORK"
status=0
PYTHONPATH="$WORK/src" /usr/bin/time -v -o time.txt "$VENV/bin/python" -m pytest -m paper -q \
    > pytest.log 2>&1 || status=$?
RESULT=$(grep -E "^[0-9]+ (passed|failed)" pytest.log | tail -1 | sed "s/ in .*//" || true)
WALL=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' time.txt)
RSS=$(sed -n 's/.*Maximum resident set size (kbytes): //p' time.txt)
MIN=$(echo "$WALL" | awk -F: '{ if (NF == 3) s = $1 * 3600 + $2 * 60 + $3; else s = $1 * 60 + $2;
      printf "%d min %d s", s / 60, s % 60 }')
CPU=$(lscpu 2>/dev/null | sed -n 's/^Model name:\s*//p' | head -1)
cat > "$SRC/benchmarks/measured/test_paper.md" <<MD
Measured on $(date -u +%Y-%m-%d) by \`benchmarks/time_test_paper.sh\` at commit $COMMIT: a fresh
clone, \`pytest -m paper\` (what \`make test-paper\` runs) under \`/usr/bin/time -v\` on $(nproc)
cores (${CPU:-unknown CPU}), no GPU, load average before the run $LOAD: ${RESULT:-no result (exit $status)}
in $MIN, $(awk -v k="$RSS" 'BEGIN { printf "%.1f", k / 1048576 }') GB peak memory.
MD
cat "$SRC/benchmarks/measured/test_paper.md"
cd "$SRC" && PYTHONPATH="$SRC/src" "$VENV/bin/sharpness" readme refresh --only test-paper --only profiles
exit "$status"
