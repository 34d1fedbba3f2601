"""GPU throughput of the training step: SGD, SAM and LE-SAM on a CIFAR-10 ResNet-18.

    .venv/bin/python benchmarks/bench_gpu.py                  # on a CUDA machine
    .venv/bin/python benchmarks/bench_gpu.py --tiny           # CPU smoke run (seconds)

The paper profile's fast path, as the engine runs it: ResNet-18 at width 1, batch 128, bf16
autocast, channels_last, cuDNN autotuning (determinism off), the training set held on the
device with crop 4 / flip / Cutout 16 done there in batches
(:class:`sharpness.train.device_data.DeviceBatches`), and the engine's own closure (with its
divergence check) inside each optimizer's step; hyper-parameters from the paper profile
(``lesam.optimizers`` of ``workflow/config/paper.yaml``).

Measured in one process:

1. **images/s and ratios**: round-robin rounds (each round runs every optimizer for
   ``--steps`` steps, the order rotated each round, so drift hits all alike); per optimizer the
   median over rounds of images/s; the SAM/SGD and LE-SAM/SAM step-time ratios from the same
   rounds (median of per-round ratios);
2. **one epoch** per optimizer: 50,000 images (391 steps) timed end to end, with the peak
   device memory of that epoch.

CIFAR-10 itself is used when ``data/cifar10`` resolves offline; otherwise a synthetic set of
the same shape (50,000 x 3 x 32 x 32, 10 classes; the step time does not depend on pixel
values) and the output says which. Targets (issue 16): SAM/SGD <= 2.05, LE-SAM/SAM <= 1.02,
>= 20,000 images/s for SGD on an H100-class GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import yaml

from sharpness.io import atomic_write_text
from sharpness.models import build_model
from sharpness.optim import build_optimizer
from sharpness.train.closure import DivergenceCheck, EngineClosure
from sharpness.train.device_data import DeviceBatches
from sharpness.train.losses import per_example_loss
from sharpness.train.model_io import InputNormalization
from sharpness.train.performance import (
    autocast_factory,
    cudnn_autotune,
    to_channels_last,
    use_channels_last,
)

REPO = Path(__file__).resolve().parents[1]
OPTIMIZERS = ("sgd", "sam", "lesam")
AUGMENT = {"crop": 4, "flip": True, "cutout": 16}


def paper_hparams() -> dict[str, dict[str, Any]]:
    """The paper profile's hyper-parameters of each optimizer (``source`` notes dropped)."""
    section = yaml.safe_load((REPO / "workflow/config/paper.yaml").read_text())["lesam"]
    return {name: {k: v for k, v in (section["optimizers"].get(name) or {}).items()
                   if k != "source"} for name in OPTIMIZERS}


def load_data(n: int, device: torch.device, tiny: bool) -> tuple[torch.Tensor, torch.Tensor,
                                                                   str]:
    """CIFAR-10 train images on the device, or a synthetic set of the same shape."""
    if not tiny:
        try:
            from sharpness.data import load_dataset

            ds = load_dataset("cifar10", str(REPO / "data"), download=False)
            return ds.x_train[:n].to(device), ds.y_train[:n].to(device), "CIFAR-10"
        except Exception as exc:  # noqa: BLE001 - any failure means: not available offline
            print(f"CIFAR-10 not available offline ({type(exc).__name__}); synthetic data")
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    return x.to(device), y.to(device), "synthetic CIFAR-10-shaped"


class Trainer:
    """One optimizer with its own model copy, stepping over device-resident batches."""

    def __init__(self, name: str, hparams: dict[str, Any], x: torch.Tensor, y: torch.Tensor,
                 *, width: float, batch: int, device: torch.device, bf16: bool,
                 total_steps: int) -> None:
        torch.manual_seed(0)
        net = build_model("resnet18", 10, 3, 32, width=width)
        model = InputNormalization(net, torch.full((3,), 0.5), torch.full((3,), 0.25)).to(device)
        if use_channels_last("auto", model, device):
            to_channels_last(model)
        self.model = model.train()
        self.opt = build_optimizer(name, model, lr=0.05, momentum=0.9, weight_decay=1e-3,
                                   total_steps=total_steps,
                                   steps_per_epoch=max(1, len(x) // batch), **hparams)
        self.loss = per_example_loss("ce", 10)
        self.autocast = autocast_factory(bf16, device)
        self.batches = DeviceBatches(x, y, batch_size=batch, drop_last=True, augment=AUGMENT,
                                     generator=torch.Generator().manual_seed(1),
                                     channels_last=use_channels_last("auto", model, device))
        self._it = iter(())
        self.device = device

    def _next(self) -> tuple[torch.Tensor, torch.Tensor]:
        try:
            return next(self._it)
        except StopIteration:
            self._it = iter(self.batches.epoch())
            return next(self._it)

    def step(self) -> None:
        """One training step, as the engine takes it."""
        x, y = self._next()
        closure = EngineClosure(self.model, x, y, self.loss, autocast=self.autocast,
                                 chunk=None, check=DivergenceCheck(None, None, None),
                                 loss_goal=None)
        self.opt.step(closure)

    def sync(self) -> None:
        """Wait for the device."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def timed(self, steps: int) -> float:
        """Wall seconds of ``steps`` steps."""
        self.sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            self.step()
        self.sync()
        return time.perf_counter() - t0

    def epoch(self) -> tuple[float, int, float | None]:
        """Seconds of one full epoch, its steps, and its peak device memory (GiB)."""
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self.sync()
        t0 = time.perf_counter()
        steps = 0
        for x, y in self.batches.epoch():
            closure = EngineClosure(self.model, x, y, self.loss, autocast=self.autocast,
                                     chunk=None, check=DivergenceCheck(None, None, None),
                                 loss_goal=None)
            self.opt.step(closure)
            steps += 1
        self.sync()
        seconds = time.perf_counter() - t0
        peak = torch.cuda.max_memory_allocated(self.device) / 2**30 \
            if self.device.type == "cuda" else None
        return seconds, steps, peak


def main() -> int:
    """Run the benchmark, print the table, write ``--out`` (JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true",
                        help="CPU smoke run: width 1/16, batch 16, 64 images, one thread")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--images", type=int, default=50000)
    parser.add_argument("--steps", type=int, default=50, help="steps per optimizer a round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--no-bf16", dest="bf16", action="store_false")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    if args.tiny:
        args.width, args.batch, args.images = 0.0625, 16, 64
        args.steps, args.rounds, args.warmup = 2, 2, 1
        torch.set_num_threads(1)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if args.device == "auto" else args.device))
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    x, y, data = load_data(args.images, device, args.tiny)
    hp = paper_hparams()
    total = (args.warmup + args.steps * args.rounds) + len(x) // args.batch
    with cudnn_autotune(True, device):
        trainers = {o: Trainer(o, hp[o], x, y, width=args.width, batch=args.batch,
                               device=device, bf16=args.bf16, total_steps=total)
                    for o in OPTIMIZERS}
        for t in trainers.values():
            t.timed(args.warmup)
        per_round: dict[str, list[float]] = {o: [] for o in OPTIMIZERS}
        for r in range(args.rounds):
            order = OPTIMIZERS[r % 3:] + OPTIMIZERS[:r % 3]
            for o in order:
                per_round[o].append(trainers[o].timed(args.steps) / args.steps)
        epochs = {o: trainers[o].epoch() for o in OPTIMIZERS}
    ips = {o: args.batch / statistics.median(per_round[o]) for o in OPTIMIZERS}
    ratio = {
        "sam/sgd": statistics.median(a / b for a, b in zip(per_round["sam"], per_round["sgd"],
                                                           strict=True)),
        "lesam/sam": statistics.median(a / b for a, b in zip(per_round["lesam"],
                                                             per_round["sam"], strict=True)),
    }
    result = {"device": name, "torch": torch.__version__, "data": data, "width": args.width,
              "batch": args.batch, "bf16": args.bf16 and device.type == "cuda",
              "images_per_s": ips, "ratios": ratio,
              "epoch": {o: {"seconds": s, "steps": n, "images": n * args.batch,
                            "peak_memory_gib": m} for o, (s, n, m) in epochs.items()},
              "targets": {"sam/sgd <= 2.05": ratio["sam/sgd"] <= 2.05,
                          "lesam/sam <= 1.02": ratio["lesam/sam"] <= 1.02,
                          "sgd >= 20000 images/s (H100-class)": ips["sgd"] >= 20000}}
    print(f"device: {name} | torch {torch.__version__} | data: {data} | ResNet-18 width "
          f"{args.width:g}, batch {args.batch}, bf16 {result['bf16']}")
    print(f"{'optimizer':<10}{'images/s':>12}{'epoch s':>10}{'epoch steps':>13}{'peak GiB':>10}")
    for o in OPTIMIZERS:
        s, n, m = epochs[o]
        print(f"{o:<10}{ips[o]:>12,.0f}{s:>10.2f}{n:>13}{'-' if m is None else f'{m:.2f}':>10}")
    print(f"SAM/SGD step time {ratio['sam/sgd']:.3f} (target <= 2.05); "
          f"LE-SAM/SAM {ratio['lesam/sam']:.3f} (target <= 1.02)")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")  # a link: replaced
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
