"""Quick-profile throughput of every model on the CPU: training images per second.

For each model at its quick settings (:data:`sharpness.models.QUICK_SETTINGS`) on CIFAR-shaped
input (3x32x32, batch 64 by default), times SGD steps (forward + backward + update) and SAM
steps (two passes) after a warm-up, and prints images/s and the SAM/SGD time ratio measured in
the same run. ViT-B/16 gets 32x32 input too (4 patches), as in the quick profile.

    python benchmarks/bench_models.py --threads 2 --batch 64 --steps 3
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F

from sharpness.models import MODELS, QUICK_SETTINGS, build_model, count_parameters
from sharpness.optim import BatchClosure, build_optimizer


def time_steps(model, optimizer: str, x, y, steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds per optimizer step: medians of ``steps`` after one warm-up step.

    CPU time (``time.process_time``, all threads of this process) is reported too because the
    machines are shared: under load the wall time stretches, the CPU time much less.
    """
    opt = build_optimizer(
        optimizer, model, lr=0.01, momentum=0.9, weight_decay=5e-4, total_steps=steps + 1
    )
    model.train()
    wall, cpu = [], []
    for i in range(steps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.step(BatchClosure(model, x, y, lambda o, t: F.cross_entropy(o, t, reduction="none")))
        if i:
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return sorted(wall)[len(wall) // 2], sorted(cpu)[len(cpu) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--models", nargs="*", default=sorted(MODELS))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.rand(args.batch, 3, 32, 32)
    y = torch.randint(0, 10, (args.batch,))
    print(
        f"torch {torch.__version__}, {args.threads} threads, batch {args.batch}, 3x32x32, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'model':<14} {'settings':<34} {'params':>9} {'SGD img/s':>10} {'SAM img/s':>10} "
        f"{'SAM/SGD':>8} {'SGD img/CPU-s':>14} {'SAM img/CPU-s':>14}"
    )
    for name in args.models:
        kw = dict(QUICK_SETTINGS[name])
        width = kw.pop("width", 1.0)
        model = build_model(name, 10, 3, 32, width=width, **kw)
        sgd, sgd_cpu = time_steps(model, "sgd", x, y, args.steps)
        sam, sam_cpu = time_steps(model, "sam", x, y, args.steps)
        settings = ", ".join(f"{k}={v}" for k, v in QUICK_SETTINGS[name].items())
        print(
            f"{name:<14} {settings:<34} {count_parameters(model):>9,} "
            f"{args.batch / sgd:>10.1f} {args.batch / sam:>10.1f} {sam / sgd:>8.2f} "
            f"{args.batch / sgd_cpu:>14.1f} {args.batch / sam_cpu:>14.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
