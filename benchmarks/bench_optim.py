"""Time per step of every optimizer on a CIFAR ResNet-18, as ratios measured in one run.

    .venv/bin/python benchmarks/bench_optim.py                 # CPU defaults (< 3 min)
    .venv/bin/python benchmarks/bench_optim.py --width 1 --batch 128 --device cuda

The optimizers are timed round-robin (each round runs every optimizer for ``--steps`` steps,
in a rotated order) so that machine-load drift hits all of them alike; the reported time is the
median over rounds of the mean step time. Each optimizer owns its own copy of the model. The
targets of issue 4 are SAM/SGD <= 2.05 and LE-SAM/SAM <= 1.02.

Eigen-SAM refreshes its eigenvector every ``eig_every`` steps (default 100): the per-step
median excludes the refresh; its amortised cost is printed on its own line.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F

from sharpness.optim import OPTIMIZERS, BatchClosure, build_optimizer

HPARAMS = {
    "sam": {"rho": 0.05},
    "sam_linf": {"rho": 0.001},
    "asam": {"rho": 0.5},
    "esam": {"rho": 0.05, "beta": 0.6, "gamma": 0.5},
    "fsam": {"rho": 0.05},
    "eigensam": {"rho": 0.05},
    "lesam": {"sigma": 0.35, "rho_max": 0.3},
}


def make_model(width: float) -> tuple[nn.Module, str]:
    """The project's CIFAR ResNet-18 (``sharpness.models``)."""
    from sharpness.models import build_model

    return build_model("resnet18", num_classes=10, in_channels=3, image_size=32, width=width), (
        "sharpness.models resnet18"
    )


def per_example(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(outputs, targets, reduction="none")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=float, default=0.25)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3, help="steps per optimizer per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(0)
    base_model, model_source = make_model(args.width)
    base_model.to(device)
    n_params = sum(p.numel() for p in base_model.parameters())
    x = torch.randn(args.batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)
    names = args.optimizers.split(",")
    total = args.rounds * args.steps + 10
    runs = {}
    for name in names:
        model = copy.deepcopy(base_model)
        opt = build_optimizer(
            name,
            model,
            lr=0.01,
            momentum=0.9,
            weight_decay=5e-4,
            total_steps=total,
            **HPARAMS.get(name, {}),
        )
        opt.step(BatchClosure(model, x, y, per_example))  # warm-up (Eigen-SAM: refresh)
        runs[name] = (model, opt)

    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            model, opt = runs[name]
            sync(device)
            start = time.perf_counter()
            for _ in range(args.steps):
                opt.step(BatchClosure(model, x, y, per_example))
            sync(device)
            times[name].append((time.perf_counter() - start) / args.steps)

    # Eigen-SAM's refresh on its own (amortised over eig_every steps)
    refresh = None
    if "eigensam" in runs:
        model, opt = runs["eigensam"]
        sync(device)
        start = time.perf_counter()
        opt.update_eigenvector(BatchClosure(model, x, y, per_example))
        sync(device)
        refresh = (time.perf_counter() - start, opt.hparams["eig_every"])

    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(
        f"config: model={model_source} width={args.width} params={n_params} batch={args.batch} "
        f"device={device} threads={args.threads} rounds={args.rounds} steps/round={args.steps} "
        f"torch={torch.__version__}"
    )
    print(f"{'optimizer':<10} {'s/step':>9} {'/sgd':>7} {'/sam':>7}")
    for name in names:
        sgd = med.get("sgd")
        sam = med.get("sam")
        r_sgd = f"{med[name] / sgd:7.3f}" if sgd else "      -"
        r_sam = f"{med[name] / sam:7.3f}" if sam else "      -"
        print(f"{name:<10} {med[name]:9.4f} {r_sgd} {r_sam}")
    if "sgd" in med and "sam" in med:
        print(f"SAM/SGD = {med['sam'] / med['sgd']:.3f} (target <= 2.05)")
    if "lesam" in med and "sam" in med:
        print(f"LE-SAM/SAM = {med['lesam'] / med['sam']:.3f} (target <= 1.02)")
    if refresh is not None:
        seconds, every = refresh
        print(
            f"eigensam refresh: {seconds:.3f} s per {every} steps "
            f"(+{seconds / every:.4f} s/step amortised)"
        )


if __name__ == "__main__":
    main()
