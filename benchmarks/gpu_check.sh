#!/usr/bin/env bash
# GPU check of the training engine (run on a machine with CUDA; nothing here needs network).
#
#   bash benchmarks/gpu_check.sh            # PYTHON=... to choose the interpreter
#
# 1. runs the CUDA tests (`pytest -m gpu`: bf16 autocast + determinism of two runs);
# 2. times full-width CIFAR ResNet-18 epochs on the embedded CIFAR-10 subset (4k images,
#    batch 128, crop+flip) with SGD and SAM, fp32 and bf16 autocast, 2 epochs each, through
#    the same `sharpness train` CLI the workflow uses, and prints seconds per epoch (second
#    epoch, so CUDA start-up is excluded), images/s and the SAM/SGD ratio.
# Results go to ${OUT:-results/gpu_check}; a summary table to stdout and summary.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-results/gpu_check}
mkdir -p "$OUT"
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print('device:', torch.cuda.get_device_name(0), '| torch', torch.__version__)"

"$PY" -m pytest -q -m gpu tests/train tests/models -p no:cacheprovider || echo "GPU TESTS FAILED"

printf "optimizer\tbf16\tsec_per_epoch\timages_per_s\tfinal_test_acc\n" > "$OUT/summary.tsv"
for opt in sgd sam; do
  for bf16 in false true; do
    run="$OUT/resnet18_${opt}_bf16-${bf16}"
    rm -rf "$run"
    cfg=$(printf '{"dataset": "cifar10_embedded", "model": "resnet18", "width": 1.0,
      "optimizer": "%s", "opt_hparams": %s, "epochs": 2, "batch_size": 128, "lr": 0.1,
      "augment": {"crop": 4, "flip": true}, "device": "cuda", "bf16": %s, "seed": 0}' \
      "$opt" "$( [ $opt = sam ] && echo '{"rho": 0.05}' || echo '{}' )" "$bf16")
    "$PY" -m sharpness.cli train --config "$cfg" --out "$run"
    "$PY" - "$run" "$opt" "$bf16" >> "$OUT/summary.tsv" <<'PYEOF'
import json, sys
run, opt, bf16 = sys.argv[1:]
rows = [json.loads(line) for line in open(f"{run}/timing.jsonl")]
final = json.load(open(f"{run}/final.json"))
sec = rows[-1]["seconds"]
print(f"{opt}\t{bf16}\t{sec:.2f}\t{final['n_train'] / sec:.0f}\t{final['final_test_acc']:.3f}")
PYEOF
  done
done
column -t "$OUT/summary.tsv"
"$PY" - "$OUT/summary.tsv" <<'PYEOF'
import csv, sys
rows = {(r["optimizer"], r["bf16"]): float(r["sec_per_epoch"])
        for r in csv.DictReader(open(sys.argv[1]), delimiter="\t")}
for bf16 in ("false", "true"):
    print(f"SAM/SGD epoch time (bf16={bf16}): {rows[('sam', bf16)] / rows[('sgd', bf16)]:.2f}")
PYEOF
