"""Time per step of every optimizer on a CIFAR ResNet-18, as ratios measured in one run.

    .venv/bin/python benchmarks/bench_optim.py                 # CPU defaults (< 3 min)
    .venv/bin/python benchmarks/bench_optim.py --width 1 --batch 128 --device cuda

The optimizers are timed round-robin (each round runs every optimizer for ``--steps`` steps,
in a rotated order) so that machine-load drift hits all of them alike; the reported time is the
median over rounds of the mean step time. Both wall time and process CPU time are measured; on
a shared CPU machine the CPU time (with ``--threads 1``) is the one that other people's jobs do
not inflate, so the ratios use it there (``--clock wall`` to override; on CUDA wall time is used). Each optimizer owns its own copy of the model. The
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
    parser.add_argument("--steps", type=int, default=1, help="steps per optimizer per round")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--clock", choices=("auto", "cpu", "wall"), default="auto")
    parser.add_argument("--overhead-repeats", type=int, default=30)
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
    cpu_times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            model, opt = runs[name]
            sync(device)
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                opt.step(BatchClosure(model, x, y, per_example))
            sync(device)
            times[name].append((time.perf_counter() - start) / args.steps)
            cpu_times[name].append((time.process_time() - start_cpu) / args.steps)

    # the wrapper's own work (perturb, restore, base step) in isolation: many repeats of
    # first_step + second_step on fixed gradients with lr = 0, no forward/backward passes
    overhead: dict[str, float] = {}
    for name in names:
        model, opt = runs[name]
        opt.zero_grad(set_to_none=True)
        per_example(model(x), y).mean().backward()
        lrs = [g["lr"] for g in opt.param_groups]
        for g in opt.param_groups:
            g["lr"] = 0.0
        sync(device)
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        for _ in range(args.overhead_repeats):
            opt.first_step(zero_grad=False)
            opt.second_step(zero_grad=False)
        sync(device)
        spent = (
            (time.process_time() - start_cpu)
            if device.type != "cuda"
            else (time.perf_counter() - start_wall)
        )
        overhead[name] = spent / args.overhead_repeats
        for g, lr in zip(opt.param_groups, lrs, strict=True):
            g["lr"] = lr

    # Eigen-SAM's refresh on its own (amortised over eig_every steps)
    refresh = None
    if "eigensam" in runs:
        model, opt = runs["eigensam"]
        sync(device)
        start = time.perf_counter()
        opt.update_eigenvector(BatchClosure(model, x, y, per_example))
        sync(device)
        refresh = (time.perf_counter() - start, opt.hparams["eig_every"])

    wall = {name: statistics.median(ts) for name, ts in times.items()}
    cpu = {name: statistics.median(ts) for name, ts in cpu_times.items()}
    clock = args.clock if args.clock != "auto" else ("wall" if device.type == "cuda" else "cpu")
    med = cpu if clock == "cpu" else wall
    print(
        f"config: model={model_source} width={args.width} params={n_params} batch={args.batch} "
        f"device={device} threads={args.threads} rounds={args.rounds} steps/round={args.steps} "
        f"torch={torch.__version__} ratios from {clock} time"
    )
    print(f"{'optimizer':<10} {'wall s':>8} {'cpu s':>8} {'/sgd':>7} {'/sam':>7}")
    for name in names:
        sgd = med.get("sgd")
        sam = med.get("sam")
        r_sgd = f"{med[name] / sgd:7.3f}" if sgd else "      -"
        r_sam = f"{med[name] / sam:7.3f}" if sam else "      -"
        print(f"{name:<10} {wall[name]:8.4f} {cpu[name]:8.4f} {r_sgd} {r_sam}")
    source = cpu_times if clock == "cpu" else times

    def paired(a: str, b: str) -> tuple[float, float, float]:
        """Median and quartiles of the per-round ratio a/b (measured minutes apart at most)."""
        ratios = sorted(x / y for x, y in zip(source[a], source[b], strict=True))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        return statistics.median(ratios), q[0], q[2]

    for a, b, label, target in (
        ("sam", "sgd", "SAM/SGD", 2.05),
        ("lesam", "sam", "LE-SAM/SAM", 1.02),
    ):
        if a in source and b in source:
            m, lo, hi = paired(a, b)
            print(
                f"{label} = {med[a] / med[b]:.3f} (ratio of medians); per-round paired ratio "
                f"median {m:.3f}, quartiles [{lo:.3f}, {hi:.3f}] (target <= {target})"
            )
    print("wrapper work per step (first_step + second_step, no passes), seconds:")
    print("  " + ", ".join(f"{name} {overhead[name]:.4f}" for name in names))
    if {"sgd", "sam", "lesam"} <= overhead.keys():
        passes = med["sgd"] - overhead["sgd"]  # one forward + backward
        est_sam = (2 * passes + overhead["sam"]) / med["sgd"]
        est_lesam = (2 * passes + overhead["lesam"]) / (2 * passes + overhead["sam"])
        print(
            f"estimate from isolated parts (2 passes + wrapper work): SAM/SGD = {est_sam:.3f}, "
            f"LE-SAM/SAM = {est_lesam:.4f}"
        )
    if refresh is not None:
        seconds, every = refresh
        print(
            f"eigensam refresh: {seconds:.3f} s per {every} steps "
            f"(+{seconds / every:.4f} s/step amortised)"
        )


if __name__ == "__main__":
    main()
