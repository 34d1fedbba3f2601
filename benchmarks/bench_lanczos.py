"""Lanczos (scipy ``eigsh``) vs plain power iteration for the top Hessian eigenvalue.

    .venv/bin/python benchmarks/bench_lanczos.py

For each model the reference top eigenvalue comes from ``eigsh`` at machine precision. Then:

* Lanczos: ``eigsh(k=1, which="LA")`` over a grid of tolerances ``tol`` and Krylov sizes
  ``ncv``; each run's HVP count, wall time and relative error are printed, and the cheapest run
  whose relative error is <= 1e-3 is the Lanczos figure.
* Power iteration: run long, record the Rayleigh quotient after every product; the figure is
  the first product count from which the relative error stays <= 1e-3 (an oracle stopping
  rule, the most favourable to power iteration). The count at which power iteration's own rule
  (relative change < 1e-4 between products) stops is printed too.

Target of issue 4: Lanczos needs at most a third of power iteration's HVPs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from sharpness.curvature import HessianOperator, power_iteration, top_eigenvalues

TARGET = 1e-3


def mse(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Half squared error against one-hot targets, mean over examples."""
    onehot = F.one_hot(targets, outputs.shape[1]).to(outputs)
    return 0.5 * ((outputs - onehot) ** 2).sum(1).mean()


def mlp_case(seed: int, steps: int = 50, lr: float = 0.1, loss: str = "ce") -> tuple:
    """MLP on a 10-class Gaussian mixture, trained by full-batch GD for ``steps`` steps.

    Cross-entropy, 50 steps at lr 0.1: one well-separated top eigenvalue (easy for power
    iteration). MSE, 400 steps at lr 0.5: the edge of stability, top eigenvalues clustered
    at ``2/lr = 4`` (4.03, 4.02, 3.94, ...), the case the eos study measures.
    """
    criterion = F.cross_entropy if loss == "ce" else mse
    gen = torch.Generator().manual_seed(seed)
    centers = torch.randn(10, 32, generator=gen) * 2
    y = torch.randint(0, 10, (512,), generator=gen)
    x = centers[y] + torch.randn(512, 32, generator=gen)
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
    label = f"mlp 32-64-64-10, {loss}, 512 ex., after {steps} GD steps at lr {lr}"
    return label, model, (x, y), "eval", criterion


def resnet_case(seed: int, width: float) -> tuple:
    """The project's CIFAR ResNet-18 at reduced width on one random batch (train mode)."""
    from sharpness.models import build_model

    torch.manual_seed(seed)
    model = build_model("resnet18", num_classes=10, in_channels=3, image_size=32, width=width)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 3, 32, 32, generator=gen)
    y = torch.randint(0, 10, (32,), generator=gen)
    return f"resnet18 width {width}, batch 32, init", model, (x, y), "train", F.cross_entropy


def run_case(label, model, data, mode, criterion, max_power: int) -> dict[str, float]:
    op = HessianOperator(model, criterion, data, mode=mode)
    reference = top_eigenvalues(op, k=1, tol=0.0, seed=123).eigenvalues[0]
    print(f"\n== {label}: dim={op.dim}, mode={mode}, reference lambda_max={reference:.6g}")

    print(f"{'lanczos ncv':>12} {'tol':>8} {'HVPs':>6} {'seconds':>8} {'rel.err':>9}")
    best = None
    for ncv in (4, 6, 8, 12, 20):
        for tol in (1e-1, 1e-2, 1e-3, 1e-4):
            start_t = time.perf_counter()
            res = top_eigenvalues(op, k=1, tol=tol, seed=0, ncv=ncv, maxiter=1000)
            seconds = time.perf_counter() - start_t
            err = abs(res.eigenvalues[0] - reference) / abs(reference)
            print(f"{ncv:>12} {tol:>8.0e} {res.num_hvps:>6} {seconds:>8.3f} {err:>9.2e}")
            if err <= TARGET and (best is None or res.num_hvps < best[0]):
                best = (res.num_hvps, seconds, err, ncv, tol)

    gen = torch.Generator().manual_seed(0)
    v0 = torch.randn(op.dim, generator=gen, dtype=torch.float64)
    start_t = time.perf_counter()
    power = power_iteration(op.matvec, v0.to(op.dtype), max_iters=max_power, rtol=0.0)
    power_seconds = time.perf_counter() - start_t
    errors = np.abs(np.asarray(power.history) - reference) / abs(reference)
    within = errors <= TARGET
    outside = np.nonzero(~within)[0]
    if outside.size == 0:
        reached: int | None = 1
    elif outside[-1] + 1 < len(within):
        reached = int(outside[-1]) + 2  # HVP count (1-based) after the last miss
    else:
        reached = None  # not within the target at the end
    own_stop = next(
        (
            i + 1
            for i in range(1, len(power.history))
            if abs(power.history[i] - power.history[i - 1]) <= 1e-4 * abs(power.history[i])
        ),
        None,
    )
    own_err = errors[own_stop - 1] if own_stop else float("nan")
    per_hvp = power_seconds / len(power.history)
    print(
        f"power iteration: {len(power.history)} HVPs in {power_seconds:.2f} s, final rel.err "
        f"{errors[-1]:.2e}; stays within {TARGET:g} from HVP {reached}; own rule (1e-4 change) "
        f"stops at {own_stop} with rel.err {own_err:.2e}"
    )
    if best is None or reached is None:
        print("no comparison: a method did not reach the target")
        return {}
    hvps, seconds, err, ncv, tol = best
    power_time = reached * per_hvp
    print(
        f"to rel.err <= {TARGET:g}: Lanczos {hvps} HVPs / {seconds:.3f} s (ncv={ncv}, tol={tol:g}, "
        f"err {err:.1e}); power {reached} HVPs / {power_time:.3f} s; "
        f"HVP ratio Lanczos/power = {hvps / reached:.3f} (target <= 0.333)"
    )
    return {"lanczos": hvps, "power": reached}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-power", type=int, default=400)
    parser.add_argument("--resnet-width", type=float, default=0.125)
    parser.add_argument("--resnet", action="store_true", help="also the ResNet-18 case (slow)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"config: threads={args.threads} torch={torch.__version__} target rel.err={TARGET:g}")
    run_case(*mlp_case(0), max_power=args.max_power)
    run_case(*mlp_case(0, steps=400, lr=0.5, loss="mse"), max_power=args.max_power)
    if args.resnet:
        run_case(*resnet_case(0, args.resnet_width), max_power=args.max_power)


if __name__ == "__main__":
    main()
