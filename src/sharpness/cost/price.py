"""Pricing: GPU-hours of planned jobs, measured on this device or estimated from counted FLOPs
(:func:`price`), and the per-item table (:func:`table`, :func:`render`). See
:mod:`sharpness.cost`."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sharpness.cost.plan import BACKWARD_FACTOR, DEFAULT_TFLOPS, FP32_FRACTION, Job, data_shape
from sharpness.runs.cache import code_manifest

PRECISIONS = ("fp32", "bf16")
#: the mark of an upper limit: a full-batch run priced at its caps (``max_steps`` and the
#: flow's ``max_evals``), or the price of a run at expected steps if it ran to those caps
BOUND = "≤ "


def default_rates(tflops: float = DEFAULT_TFLOPS, tflops_fp32: float | None = None
                  ) -> dict[str, float]:
    """The analytic estimate's sustained TFLOP/s per precision: ``tflops`` in bf16 and
    ``tflops_fp32`` (default ``FP32_FRACTION * tflops``) in fp32."""
    return {"fp32": tflops_fp32 if tflops_fp32 is not None else FP32_FRACTION * tflops,
            "bf16": tflops}


def parse_tflops(text: str) -> dict[str, float]:
    """``--tflops``: ``"fp32=20,bf16=40"`` (each precision its own rate; one not named keeps
    its default) or a bare number, the bf16 rate (fp32 at ``FP32_FRACTION`` of it)."""
    text = str(text).strip()
    try:
        rates = default_rates(float(text))
    except ValueError:
        rates = default_rates()
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, eq, value = part.partition("=")
            if not eq or name.strip() not in PRECISIONS:
                raise ValueError(f"--tflops {text!r}: give a number or "
                                 f"{','.join(f'{p}=N' for p in PRECISIONS)}") from None
            rates[name.strip()] = float(value)
    if not all(r > 0 for r in rates.values()):
        raise ValueError(f"--tflops {text!r}: rates must be positive")
    return rates


def rates_text(rates: Mapping[str, float]) -> str:
    """``fp32 20 TFLOP/s, bf16 40 TFLOP/s``: the rates as printed beside a price."""
    return ", ".join(f"{p} {rates[p]:g} TFLOP/s" for p in PRECISIONS if p in rates)


#: the step times the planner prices from by default (a GPU's; see sharpness.cost.measure)
MEASURED = "measured.yaml"


@functools.lru_cache(maxsize=8)
def measured_throughputs(path: str | None = None) -> tuple[dict[str, Any], ...]:
    """Step times recorded by ``sharpness cost measure`` (``path``; default ``measured.yaml``
    beside this module): each entry names the device, the commit, the model, the data set,
    the per-device batch, the optimizer and its passes, the precision and the seconds of one
    step. An entry that matches a job prices it without any change of code."""

    if path is None:
        where = "sharpness/cost/measured.yaml"
        text = resources.files("sharpness.cost").joinpath(MEASURED).read_text("utf-8")
    else:
        where = path
        try:
            text = Path(path).read_text("utf-8")
        except OSError as err:
            raise ValueError(f"--measured {path}: cannot read it ({err})") from err
    entries = yaml.safe_load(text) or []
    need = {"commit", "model", "dataset", "batch", "precision", "step_seconds"}
    if not isinstance(entries, list):
        raise ValueError(f"{where}: a list of entries expected")
    for k, entry in enumerate(entries):
        missing = need - set(entry)
        if missing or not ({"device", "gpu"} & set(entry)):
            raise ValueError(f"{where}: entry {k} lacks "
                             f"{sorted(missing | ({'device'} - set(entry)))}")
    return tuple(entries)


#: the modules one measured training step runs (followed through every ``sharpness``
#: import): a step time measured with other sources of them no longer prices this checkout
TRAINING_CODE = ("sharpness.train",)
#: files of that closure that keep records and never change what a step costs (provenance,
#: locks, signing, atomic writes, error texts, limits on files read): left out, so an edit to
#: the bookkeeping does not make every measured step time stale
BOOKKEEPING = ("sharpness/runs/", "sharpness/io.py", "sharpness/errors.py",
               "sharpness/limits.py", "sharpness/mappings.py")


def training_manifest() -> dict[str, str]:
    """``{path: sha256}`` of the sources a training step runs: :data:`TRAINING_CODE` and
    what it imports, less :data:`BOOKKEEPING`."""
    return {path: digest for path, digest in code_manifest(*TRAINING_CODE).items()
            if not path.startswith(BOOKKEEPING)}


@functools.cache
def training_code() -> str:
    """The training code's fingerprint (16 hex digits): SHA-256 of
    :func:`training_manifest`. Package versions are left out (the PyTorch version is written
    beside each step time), so a plan made on another machine from the same commit agrees
    with the GPU's."""
    manifest = json.dumps(training_manifest(), sort_keys=True)
    return hashlib.sha256(manifest.encode()).hexdigest()[:16]


def unusable(entry: Mapping[str, Any], device: str | None = None) -> str | None:
    """Why a measured step time does not price this checkout's runs (None: it does): it was
    measured with other training code (or before entries carried its fingerprint), or on
    another GPU than ``device`` (the GPU that will run them; None when planning elsewhere:
    any device's entry is used, and its basis names the device)."""
    code = entry.get("code")
    if code != training_code():
        return "with other training code" if code else "without a training-code fingerprint"
    where = entry.get("device") or entry.get("gpu")
    if device is not None and where != device:
        return f"on {where}, not on this {device}"
    return None


def measured_note(path: str | None = None, device: str | None = None) -> str:
    """What the planner says of the step times it does not use: how many, and why (those
    runs fall back to the analytic price); '' when every entry is usable."""
    why: dict[str, int] = {}
    for entry in measured_throughputs(path):
        reason = unusable(entry, device)
        if reason is not None:
            why[reason] = why.get(reason, 0) + 1
    if not why:
        return ""
    where = path or "sharpness/cost/measured.yaml"
    parts = [f"{n} measured {reason}" for reason, n in sorted(why.items())]
    return (f"{sum(why.values())} step times of {where} not used ({'; '.join(parts)}; this "
            f"checkout's training code is {training_code()}): their shapes are priced "
            "analytically")


def recorded_step(job: Job, precision: str, path: str | None = None,
                  device: str | None = None) -> tuple[float, str] | None:
    """(seconds of one forward+backward pass at the job's per-device batch, its basis) from
    :func:`measured_throughputs`: an entry of the job's shape and precision, of its own
    optimizer if one was measured (its step divided by the optimizer's passes), else of any
    optimizer; only entries :func:`unusable` finds nothing against (this checkout's training
    code; on ``device`` when given); None when none was measured."""
    width = float(job.width)
    matches = [e for e in measured_throughputs(path)
               if (e["model"], e["dataset"], int(e["batch"]), e["precision"]) ==
               (job.model, job.dataset, job.shape_key[-1], precision)
               and float(e.get("width", 1.0)) == width and int(e.get("packed", 1)) == 1
               and unusable(e, device) is None]
    if not matches:
        return None
    # a run alone on its device, in the recipe it is configured with where that was measured
    # (the fast recipe's bf16 prices a bf16 column only when no configured bf16 was timed)
    matches.sort(key=lambda e: (e.get("optimizer", "sgd") != job.optimizer,
                                e.get("recipe", "configured") != "configured"))
    e = matches[0]
    where = e.get("device") or e["gpu"]
    torch_text = f", torch {e['torch']}" if e.get("torch") else ""
    recipe = f" {e['recipe']}" if e.get("recipe") not in (None, "configured") else ""
    return (float(e["step_seconds"]) / float(e.get("passes", 1.0)),
            f"measured {precision}{recipe} on {where} at {e['commit']}{torch_text}")


def forward_flops(job: Job) -> float:
    """Forward FLOPs of one example, counted on a meta-device copy of the model (once per
    model shape in a process: they depend on the architecture and the input, not on the
    batch or the precision a job is priced in)."""
    return model_flops(job.model, float(job.width), tuple(sorted(job.model_kwargs.items())),
                       job.dataset)


@functools.cache
def model_flops(model_name: str, width: float, model_kwargs: tuple[tuple[str, Any], ...],
                dataset: str) -> float:
    """Forward FLOPs of one ``dataset`` example through ``model_name`` (see
    :func:`forward_flops`)."""
    import torch  # lazy: torch; analytic pricing runs without it
    from torch.utils.flop_counter import FlopCounterMode  # lazy: torch

    from sharpness.models import build_model  # lazy: torch

    _, ch, side, classes, _ = data_shape(dataset)
    with torch.device("meta"):
        model = build_model(model_name, classes, ch, side, width=width, **dict(model_kwargs))
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
    import torch  # lazy: torch; analytic pricing runs without it
    from torch.nn import functional as F  # lazy: torch

    from sharpness.models import build_model  # lazy: torch
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
    basis: str = ""      # what the price rests on: measured where and when, or analytic at a rate
    cap_hours: float = 0.0  # the price at the job's caps (= gpu_hours for a run without one)


def _passes_at_batch(job: Job) -> float:
    """Forward+backward passes of the job at its per-device batch (evaluation at forward cost)."""
    per_device_batch = job.shape_key[-1]
    return job.steps * job.passes * job.batch / per_device_batch \
        + job.extra_passes * job.n_train / per_device_batch \
        + job.eval_examples / per_device_batch / BACKWARD_FACTOR


def price(jobs: list[Job], *, method: str, tflops: float = DEFAULT_TFLOPS,
          device: Any = None, precision: str | None = None,
          tflops_fp32: float | None = None,
          rates: Mapping[str, float] | None = None,
          measured: str | None = None) -> list[Priced]:
    """GPU-hours of each job, ``method`` = ``analytic`` or ``measured`` (on ``device``).

    ``precision``: price every job in ``"fp32"`` or ``"bf16"`` (default: each job as
    configured). The analytic estimate runs at ``rates`` (TFLOP/s per precision; default
    :func:`default_rates` of ``tflops`` and ``tflops_fp32``). A shape measured by
    ``sharpness cost measure`` (:func:`measured_throughputs` of ``measured``, default the
    packaged ``measured.yaml``) is priced from that measurement in either method, when it
    was measured with this checkout's training code and, on a CUDA ``device``, on that GPU
    (:func:`unusable`). Each price names its basis."""
    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    rates = dict(rates) if rates is not None else default_rates(tflops, tflops_fp32)
    cache: dict[tuple[Any, ...], float] = {}

    def one(job: Job) -> Priced:
        mode = precision or job.precision
        recorded = recorded_step(job, mode, measured, gpu_name(device))
        if recorded is not None:
            return Priced(job, _passes_at_batch(job) * recorded[0] / 3600.0, None, recorded[1])
        if method == "analytic":
            flops = forward_flops(job) * (BACKWARD_FACTOR * (job.steps * job.passes * job.batch
                                              + job.extra_passes * job.n_train)
                           + job.eval_examples)
            return Priced(job, flops / (rates[mode] * 1e12) / 3600.0, flops,
                          f"analytic {mode} at {rates[mode]:g} TFLOP/s")
        key = (*job.shape_key, mode)
        if key not in cache:
            cache[key] = measure_pass_seconds(job, device, precision=mode)
        return Priced(job, _passes_at_batch(job) * cache[key] / 3600.0, None,
                      f"measured {mode} on {_device_name(device)} now")

    out = []
    for job in jobs:
        p = one(job)
        p.cap_hours = one(job.at_cap()).gpu_hours if job.expected else p.gpu_hours
        if job.until_goal:  # which steps a full-batch run is priced at
            p.basis += f" {job.expected}" if job.expected else " at the step caps"
        out.append(p)
    return out


def gpu_name(device: Any) -> str | None:
    """The name of ``device`` when it is a CUDA GPU (the one measured step times must come
    from), else None (planning on a machine without one: any GPU's step times are used)."""
    if device is None or getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return None
    return _device_name(device)


def _device_name(device: Any) -> str:
    """The GPU's name (or the device type) for a price's basis."""
    try:
        import torch  # lazy: torch; analytic pricing runs without it

        if device is not None and device.type == "cuda":
            return str(torch.cuda.get_device_name(device))
    except (ImportError, RuntimeError, AttributeError):
        pass
    return str(getattr(device, "type", device))


@dataclass
class Row:
    """One line of the cost table."""

    paper: str
    item: str
    runs: int
    steps: int
    gpu_hours: float
    bound: bool         # some run priced at its caps (an upper limit)
    cap_hours: float = 0.0  # every run at its caps (the upper limit of gpu_hours)
    cap_steps: int = 0


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
            row.cap_hours += p.cap_hours
            row.cap_steps += p.job.at_cap().steps
    return list(rows.values()), total_row([p for p in priced if item is None or item in p.job.items])


def total_row(priced: list[Priced]) -> Row:
    """The total of priced runs, each once: the one sum the cost table, the README's profile
    price and the planner's totals use (``gpu_hours`` at expected steps where a full-batch
    run has them, ``cap_hours`` with every run at its caps)."""
    return Row("all", "total (each run once)", len(priced), sum(p.job.steps for p in priced),
               sum(p.gpu_hours for p in priced), any(p.job.bound for p in priced),
               sum(p.cap_hours for p in priced),
               sum(p.job.at_cap().steps for p in priced))


def hours_text(hours: float, bound: bool = False, cap: float | None = None) -> str:
    """GPU-hours as printed: ``≤ X`` for a price at the caps (``bound``), ``X (≤ Y at the
    step cap)`` for a price at expected steps whose caps ``cap`` cost more (runs without an
    expected count are then in X at their caps)."""
    def num(h: float) -> str:
        return f"{h:,.1f}" if h >= 0.1 else (f"{h:.2g}" if h > 0 else "0")
    if cap is not None and num(cap) != num(hours):
        return f"{num(hours)} ({BOUND}{num(cap)} at the step cap)"
    return (BOUND if bound and hours > 0 else "") + num(hours)


def _steps_text(r: Row) -> str:
    if r.cap_steps > r.steps:
        return f"{r.steps:,} ({BOUND}{r.cap_steps:,} at the cap)"
    return (BOUND if r.bound else "") + f"{r.steps:,}"


def render(rows: list[Row], total: Row, header: str) -> str:
    """A Markdown table."""
    def fmt(r: Row) -> str:
        return (f"| {r.paper} | {r.item} | {r.runs:,} | {_steps_text(r)} | "
                f"{hours_text(r.gpu_hours, r.bound, r.cap_hours)} |")
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

    def fmt(r: Row, per: list[Row]) -> str:
        return (f"| {r.paper} | {r.item} | {r.runs:,} | {_steps_text(r)} | "
                + " | ".join(hours_text(x.gpu_hours, x.bound, x.cap_hours) for x in per)
                + " |")

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
