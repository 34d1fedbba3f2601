"""Pricing: GPU-hours of planned jobs, measured on this device or estimated from counted FLOPs
(:func:`price`), and the per-item table (:func:`table`, :func:`render`). See
:mod:`sharpness.cost`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sharpness.cost.plan import BACKWARD_FACTOR, DEFAULT_TFLOPS, FP32_FRACTION, Job, data_shape

PRECISIONS = ("fp32", "bf16")


def forward_flops(job: Job) -> float:
    """Forward FLOPs of one example, counted on a meta-device copy of the model."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from sharpness.models import build_model

    _, ch, side, classes, _ = data_shape(job.dataset)
    with torch.device("meta"):
        model = build_model(job.model, classes, ch, side, width=job.width, **job.model_kwargs)
        x = torch.zeros(2, ch, side, side)
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            model.eval()
            model(x)
    return counter.get_total_flops() / 2


def measure_pass_seconds(job: Job, device: Any, *, warmup: int = 3, steps: int = 10,
                         precision: str | None = None) -> float:
    """Seconds of one SGD step (forward, backward, update) at the job's per-device batch, in
    ``precision`` (``"fp32"`` or ``"bf16"`` autocast on CUDA; default the job's own)."""
    import torch
    from torch.nn import functional as F

    from sharpness.models import build_model
    from sharpness.train.performance import autocast_factory, to_channels_last, use_channels_last

    _, ch, side, classes, _ = data_shape(job.dataset)
    batch = job.shape_key[-1]
    model = build_model(job.model, classes, ch, side, width=job.width, **job.model_kwargs)
    model = model.to(device).train()
    if use_channels_last("auto", model, device):
        to_channels_last(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.rand(batch, ch, side, side, device=device)
    y = torch.randint(0, classes, (batch,), device=device)
    autocast = autocast_factory((precision or job.precision) == "bf16", device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = F.cross_entropy(model(x).float(), y)
        loss.backward()
        opt.step()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - t0) / steps


@dataclass
class Priced:
    """A job with its price."""

    job: Job
    gpu_hours: float
    flops: float | None  # total FLOPs (analytic) or None (measured)


def price(jobs: list[Job], *, method: str, tflops: float = DEFAULT_TFLOPS,
          device: Any = None, precision: str | None = None,
          tflops_fp32: float | None = None) -> list[Priced]:
    """GPU-hours of each job, ``method`` = ``analytic`` or ``measured`` (on ``device``).

    ``precision``: price every job in ``"fp32"`` or ``"bf16"`` (default: each job as
    configured). ``tflops`` is the bf16 throughput of the analytic estimate, ``tflops_fp32``
    the fp32 one (default ``FP32_FRACTION * tflops``)."""
    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    fp32 = tflops_fp32 if tflops_fp32 is not None else FP32_FRACTION * tflops
    cache: dict[tuple[Any, ...], float] = {}
    out = []
    for job in jobs:
        mode = precision or job.precision
        if method == "analytic":
            key = job.shape_key
            if key not in cache:
                cache[key] = forward_flops(job)
            fwd = cache[key]
            flops = fwd * (BACKWARD_FACTOR * (job.steps * job.passes * job.batch
                                              + job.extra_passes * job.n_train)
                           + job.eval_examples)
            rate = tflops if mode == "bf16" else fp32
            out.append(Priced(job, flops / (rate * 1e12) / 3600.0, flops))
        else:
            key = (*job.shape_key, mode)
            if key not in cache:
                cache[key] = measure_pass_seconds(job, device, precision=mode)
            per_pass = cache[key]  # at the per-device batch, on one device
            per_device_batch = job.shape_key[-1]
            passes = job.steps * job.passes * job.batch / per_device_batch \
                + job.extra_passes * job.n_train / per_device_batch \
                + job.eval_examples / per_device_batch / BACKWARD_FACTOR
            out.append(Priced(job, passes * per_pass / 3600.0, None))
    return out


@dataclass
class Row:
    """One line of the cost table."""

    paper: str
    item: str
    runs: int
    steps: int
    gpu_hours: float
    bound: bool


def table(priced: list[Priced], item: str | None = None) -> tuple[list[Row], Row]:
    """Per-item rows (shared runs counted in each) and the total (each run once)."""
    rows: dict[tuple[str, str], Row] = {}
    for p in priced:
        for it in p.job.items:
            if item is not None and it != item:
                continue
            row = rows.setdefault((p.job.paper, it), Row(p.job.paper, it, 0, 0, 0.0, False))
            row.runs += 1
            row.steps += p.job.steps
            row.gpu_hours += p.gpu_hours
            row.bound |= p.job.bound
    chosen = [p for p in priced if item is None or item in p.job.items]
    total = Row("all", "total (each run once)", len(chosen), sum(p.job.steps for p in chosen),
                sum(p.gpu_hours for p in chosen), any(p.job.bound for p in chosen))
    return list(rows.values()), total


def render(rows: list[Row], total: Row, header: str) -> str:
    """A Markdown table."""
    def fmt(r: Row) -> str:
        le = "<= " if r.bound else ""
        hours = f"{r.gpu_hours:,.1f}" if r.gpu_hours >= 0.1 else f"{r.gpu_hours:.2g}"
        return f"| {r.paper} | {r.item} | {r.runs:,} | {le}{r.steps:,} | {le}{hours} |"
    lines = [header, "", "| paper | item | runs | optimizer steps | GPU-hours |",
             "|---|---|---:|---:|---:|"]
    lines += [fmt(r) for r in sorted(rows, key=lambda r: (r.paper, r.item))]
    lines.append(fmt(total).replace(f"| {total.paper} | {total.item} |",
                                    f"| **{total.paper}** | **{total.item}** |"))
    return "\n".join(lines)


def render_precisions(tables: dict[str, tuple[list[Row], Row]], header: str) -> str:
    """A Markdown table with one GPU-hours column per precision (``{precision: table()}``,
    the same jobs priced in each)."""
    names = list(tables)
    first_rows, first_total = tables[names[0]]
    other = {name: {(r.paper, r.item): r for r in rows} for name, (rows, _) in tables.items()}

    def hours(r: Row) -> str:
        le = "<= " if r.bound else ""
        return le + (f"{r.gpu_hours:,.1f}" if r.gpu_hours >= 0.1 else f"{r.gpu_hours:.2g}")

    def fmt(r: Row, per: list[Row]) -> str:
        le = "<= " if r.bound else ""
        return (f"| {r.paper} | {r.item} | {r.runs:,} | {le}{r.steps:,} | "
                + " | ".join(hours(x) for x in per) + " |")

    lines = [header, "", "| paper | item | runs | optimizer steps | "
             + " | ".join(f"GPU-hours {n}" for n in names) + " |",
             "|---|---|---:|---:|" + "---:|" * len(names)]
    for r in sorted(first_rows, key=lambda r: (r.paper, r.item)):
        lines.append(fmt(r, [other[n][(r.paper, r.item)] for n in names]))
    total = fmt(first_total, [tables[n][1] for n in names])
    lines.append(total.replace(f"| {first_total.paper} | {first_total.item} |",
                               f"| **{first_total.paper}** | **{first_total.item}** |"))
    return "\n".join(lines)


def iter_items(jobs: list[Job]) -> Iterator[str]:
    """Every item name, once, in order of appearance."""
    seen: set[str] = set()
    for job in jobs:
        for it in job.items:
            if it not in seen:
                seen.add(it)
                yield it
