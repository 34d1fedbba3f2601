#!/usr/bin/env bash
# The GPU check: prices from the first real step, on any CUDA machine with a recent PyTorch and
# no network, without installing the pinned stack (it runs from src/ with PYTHONPATH).
#
#   bash benchmarks/gpu_check.sh            # on a CUDA machine (under 10 minutes on an H200)
#   bash benchmarks/gpu_check.sh --tiny     # CPU smoke run of the same path (numbers mean nothing)
#   PYTHON=... OUT=... PLAN=plans/plan.json bash benchmarks/gpu_check.sh
#
# Needs, beside PyTorch: numpy, scipy, pyyaml, tqdm (wheels about 55 MiB together; on a machine
# without network copy them and `pip install --no-deps --no-index --find-links DIR numpy scipy
# pyyaml tqdm`). The first step names any that is missing and stops.
#
# 1. the device, the driver and the PyTorch version (device.txt);
# 2. `sharpness cost measure` of each run shape the plan bought (PLAN, default plans/plan.json;
#    written first at analytic prices if absent) in the configured recipe (fp32, deterministic
#    kernels, as the paper profile trains) and in the fast one (bf16 autocast, cuDNN
#    autotuning), each alone and packed 2, 4 and 8 to the GPU, with the PyTorch version beside
#    every number, into src/sharpness/cost/measured.yaml (written after each shape: a run cut
#    short keeps what it measured). `sharpness plan` and `sharpness cost` then price from it,
#    the configured recipe of a run alone, in preference to the analytic estimate, and say so;
# 3. the GPU tests (`pytest -m gpu`) and benchmarks/bench_gpu.py where pytest is installed.
# Results under ${OUT:-results/gpu_check}: device.txt, measure.txt, cost_paper.md, bench.*.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-results/gpu_check}
PLAN=${PLAN:-plans/plan.json}
LIMIT=${LIMIT:-480}            # seconds for the measurement (the whole check stays under 10 min)
TINY=0
if [ "${1:-}" = "--tiny" ]; then TINY=1; fi
mkdir -p "$OUT"

missing=$("$PY" - <<'EOF'
import importlib.util
need = {"torch": "torch", "numpy": "numpy", "scipy": "scipy", "yaml": "pyyaml", "tqdm": "tqdm"}
print(" ".join(w for m, w in need.items() if importlib.util.find_spec(m) is None))
EOF
)
if [ -n "$missing" ]; then
  echo "gpu_check: missing Python packages: $missing (pip install --no-deps $missing)" >&2
  exit 2
fi

if [ "$TINY" = 1 ]; then
  echo "tiny mode: CPU smoke run (no CUDA needed; numbers mean nothing)"
  "$PY" benchmarks/bench_gpu.py --tiny --out "$OUT/bench.json" | tee "$OUT/bench.txt"
  "$PY" -m sharpness.cli cost --configfile workflow/config/paper.yaml --item table_imagenet \
    --method analytic --out "$OUT/cost_paper.md" > /dev/null
  echo "gpu_check tiny: ok ($OUT)"
  exit 0
fi

"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print('device:', torch.cuda.get_device_name(0), '| torch', torch.__version__, \
'| CUDA', torch.version.cuda)" | tee "$OUT/device.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >> "$OUT/device.txt" \
  2>/dev/null || true

if [ ! -f "$PLAN" ]; then
  "$PY" -m sharpness.cli plan --gpu-hours "${GPU_HOURS:-100}" \
    --configfile workflow/config/paper.yaml --method analytic --out "${PLAN%.json}.yaml" \
    > "$OUT/plan_analytic.md"
fi
timeout "$LIMIT" "$PY" -m sharpness.cli cost measure --configfile workflow/config/paper.yaml \
  --base none --plan "$PLAN" --precision fp32 --recipes configured,fast --packed 1,2,4,8 \
  --warmup 2 --steps 5 --out src/sharpness/cost/measured.yaml 2>&1 | tee "$OUT/measure.txt" \
  || echo "gpu_check: the measurement stopped at its ${LIMIT} s limit; what it measured is kept" \
  | tee -a "$OUT/measure.txt"
"$PY" -m sharpness.cli cost --configfile workflow/config/paper.yaml --method analytic \
  --out "$OUT/cost_paper.md" > /dev/null || echo "cost table failed"

if "$PY" -c "import pytest" 2>/dev/null; then
  timeout 60 "$PY" -m pytest -q -m gpu tests/train tests/models -p no:cacheprovider 2>&1 \
    | tee "$OUT/tests.txt" || echo "GPU TESTS FAILED OR STOPPED" | tee -a "$OUT/tests.txt"
fi
timeout 60 "$PY" benchmarks/bench_gpu.py --out "$OUT/bench.json" | tee "$OUT/bench.txt" \
  || echo "bench_gpu stopped at its limit" | tee -a "$OUT/bench.txt"
echo "gpu_check: done ($OUT; step times in src/sharpness/cost/measured.yaml)"
