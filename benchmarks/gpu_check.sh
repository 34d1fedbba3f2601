#!/usr/bin/env bash
# The GPU benchmark of the training engine, as one prepared script (no network needed).
#
#   bash benchmarks/gpu_check.sh            # on a CUDA machine (a few minutes on an H100)
#   bash benchmarks/gpu_check.sh --tiny     # CPU smoke run of the same steps (about a minute)
#   PYTHON=... OUT=... bash benchmarks/gpu_check.sh
#
# 1. the CUDA tests (`pytest -m gpu`: bf16 autocast, determinism of two runs);
# 2. benchmarks/bench_gpu.py: images/s of SGD, SAM and LE-SAM on ResNet-18 CIFAR-10 at width
#    1, batch 128, bf16, device-resident data with crop/flip/Cutout on the device; the
#    SAM/SGD and LE-SAM/SAM ratios measured in one run; one epoch's time and peak memory per
#    optimizer (targets: SAM/SGD <= 2.05, LE-SAM/SAM <= 1.02, SGD >= 20,000 images/s on an
#    H100-class GPU);
# 3. `sharpness cost` of the paper profile with step times measured on this GPU.
# Results under ${OUT:-results/gpu_check}: bench.json, bench.txt, cost_paper.md, tests.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-results/gpu_check}
TINY=0
if [ "${1:-}" = "--tiny" ]; then TINY=1; fi
mkdir -p "$OUT"

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

"$PY" -m pytest -q -m gpu tests/train tests/models -p no:cacheprovider 2>&1 \
  | tee "$OUT/tests.txt" || echo "GPU TESTS FAILED" | tee -a "$OUT/tests.txt"

"$PY" benchmarks/bench_gpu.py --out "$OUT/bench.json" | tee "$OUT/bench.txt"

timeout 300 "$PY" -m sharpness.cli cost --configfile workflow/config/paper.yaml \
  --method measured --out "$OUT/cost_paper.md" || echo "cost measurement did not finish"
echo "gpu_check: done ($OUT)"
