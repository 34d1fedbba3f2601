"""Checks before a GPU budget is spent (``sharpness campaign``): each fails loudly, naming what
is wrong and what to do, before anything is measured, planned or launched.

* a GPU is visible to torch (paper mode; ``tiny`` mode runs the same path on the CPU);
* the driver and torch agree: the GPU's compute capability is one this torch build carries
  kernels for, and the driver (``nvidia-smi``) and torch's CUDA version are reported;
* one real training step through the engine on the device (:func:`sharpness.cost.measure.time_steps`);
* the data sets and pretrained weight files the planned runs read are present, in the mirror,
  or fetchable from their official source (checked for the plan's runs only: a plan without
  ImageNet needs no ImageNet); with ``data.download: false`` (no network) only present or
  mirrored copies count, and each one missing is named;
* the results folder's disk has room for the checkpoints (``min_free_gb``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sharpness.errors import SharpnessError

#: the training step the preflight runs: a narrow ResNet-18 on the committed CIFAR-10 copy
STEP_CONFIG = {"dataset": "cifar10_embedded", "model": "resnet18", "width": 0.0625,
               "batch_size": 32, "optimizer": "sam", "opt_hparams": {"rho": 0.05}}


class PreflightError(SharpnessError):
    """A check before the campaign failed; the message says what and what to do."""


@dataclass
class Report:
    """What the checks found, line by line (printed, and kept in the campaign record)."""

    device: str
    lines: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        self.lines.append(text)
        print(f"preflight: {text}", flush=True)


def check_gpu(report: Report) -> int:
    """The number of visible GPUs, or :class:`PreflightError`; checks the kernels' arch."""
    import torch  # lazy: torch

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        raise PreflightError(
            "no GPU is visible to torch (torch.cuda.is_available() is False): the paper "
            "profile trains on GPUs and refuses to fall back to the CPU. Check "
            "CUDA_VISIBLE_DEVICES, the driver (nvidia-smi) and that torch was installed "
            "with CUDA; `--tiny` runs this path on the CPU as a check.")
    n = torch.cuda.device_count()
    name = torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    arch = f"sm_{major}{minor}"
    built = torch.cuda.get_arch_list()
    if built and arch not in built and not any(a.startswith("compute_") for a in built):
        raise PreflightError(f"{name} is {arch} but this torch build carries kernels for "
                             f"{', '.join(built)} only: install a torch build for this GPU")
    report.say(f"{n} GPU(s) visible: {name} ({arch}); torch {torch.__version__} built for "
               f"CUDA {torch.version.cuda}; driver {driver_version() or 'unknown'}")
    return n


def driver_version() -> str | None:
    """The NVIDIA driver version (``nvidia-smi``), None when it cannot be asked."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None


def check_step(report: Report, device: str, data_root: str) -> float:
    """One real training step (after one warm-up) on ``device``; seconds per step."""
    from sharpness.cost.measure import time_steps

    cfg = {**STEP_CONFIG, "device": device, "data_root": data_root, "epochs": 1,
           "checkpoint_every": 0, "eval_every": 0, "test_size": 32, "seed": 0}
    try:
        seconds, peak = time_steps(cfg, warmup=1, steps=1)
    except Exception as err:  # any failure of the step is the finding
        raise PreflightError(f"a training step on {device} failed: {err}") from err
    extra = f", peak {peak:.0f} MB" if peak is not None else ""
    report.say(f"a SAM training step of a narrow ResNet-18 ran on {device}: "
               f"{seconds * 1e3:.1f} ms{extra}")
    return seconds


def _mirror(data: dict[str, Any]) -> Path | None:
    """The mirror folder the data jobs would try (``data.mirror`` or the environment's)."""
    from sharpness.data.fetch import MIRROR_ENV

    value = data.get("mirror") or os.environ.get(MIRROR_ENV)
    return Path(value) if value else None


def _data_line(name: str, data: dict[str, Any]) -> tuple[str, str | None]:
    """What the preflight says of data set ``name``, and what to do when it is missing and
    cannot be fetched (None: present or fetchable)."""
    from sharpness.data.fetch import committed_copy, in_mirror, missing_message, verify
    from sharpness.data.registry import get_spec

    spec = get_spec(name)
    root, mirror = Path(data.get("root") or "data"), _mirror(data)
    folder = Path(data["imagenet"]) if name == "imagenet" and data.get("imagenet") \
        else root / (spec.subdir or name)
    committed = committed_copy(spec, root)
    if committed is not None or not verify(spec, folder):
        return f"data {name}: present in {committed or folder}", None
    if mirror is not None and mirror.is_dir() and in_mirror(spec, mirror):
        return f"data {name}: absent, in the mirror {mirror} (checked when fetched)", None
    if spec.urls and spec.files and data.get("download", True):  # a layout-checked set
        # (PACS, VLCS) names its source, but nothing downloads it: it is never fetchable
        return (f"data {name}: absent, fetchable from {spec.urls[0]} (this machine must "
                "reach it, or set data.mirror; data.download: false says it cannot)"), None
    return f"data {name}: MISSING", missing_message(spec, folder, mirror)


def _weights_line(key: str, data: dict[str, Any]) -> tuple[str, str | None]:
    """What the preflight says of pinned weight file ``key`` (as :func:`_data_line`)."""
    from sharpness.data.weights import PINNED, hub_checkpoints, missing_weights, problem

    pin = PINNED[key]
    path = hub_checkpoints() / pin.file_name
    if path.is_file():
        why = problem(path, pin)
        if why is None:
            return f"weights {key}: present in {path}", None
        return f"weights {key}: NOT THE PINNED FILE", f"{path} is not {pin.title}: {why}"
    if data.get("download", True):
        return (f"weights {key}: absent, fetchable from {pin.url} (this machine must reach "
                "it)"), None
    return f"weights {key}: MISSING", missing_weights(pin, path, "downloads are off")


def check_data(report: Report, datasets: Iterable[str], config: dict[str, Any],
               weights: Iterable[str] = ()) -> None:
    """Every data set (a built stand-in: those it is built from) and pinned weight file the
    plan reads is present (verified), in the mirror, or fetchable; else
    :class:`PreflightError` naming each one that is not, with what to put where. With
    ``data.download: false`` (no network) only present or mirrored copies count."""
    from sharpness.data.registry import on_disk

    data = config.get("data") or {}
    missing = {}
    lines = [(n, *_data_line(n, data)) for n in on_disk(datasets)]
    lines += [(k, *_weights_line(k, data)) for k in sorted(set(weights))]
    for name, line, what_to_do in lines:
        report.say(line)
        if what_to_do is not None:
            missing[name] = what_to_do
    if missing:
        raise PreflightError(
            f"missing and not fetchable here: {', '.join(missing)}. Carry them with `sharpness "
            "data bundle` on a machine that has them and `sharpness data unbundle` here, or:\n"
            + "\n".join(missing.values()))


def check_disk(report: Report, where: str | Path, min_free_gb: float) -> None:
    """At least ``min_free_gb`` free where the results and checkpoints go."""
    where = Path(where)
    probe = where if where.exists() else where.parent
    free = shutil.disk_usage(probe if probe.exists() else Path.cwd()).free / 2**30
    if free < min_free_gb:
        raise PreflightError(f"{free:.1f} GiB free under {probe.resolve()}, less than the "
                             f"{min_free_gb:g} GiB the checkpoints need (--min-free-gb)")
    report.say(f"disk: {free:.1f} GiB free under {probe.resolve()}")


def device_check(tiny: bool) -> tuple[Report, int]:
    """The first check, before anything is loaded: a GPU (paper mode), or the CPU in tiny
    mode; (the report, GPUs visible: 0 in tiny mode)."""
    if tiny:
        report = Report("cpu")
        report.say("tiny mode: the campaign's path on the CPU (no GPU asked for)")
        return report, 0
    report = Report("cuda")
    return report, check_gpu(report)


def preflight(report: Report, *, config: dict[str, Any], results: str | Path = "results",
              min_free_gb: float = 20.0) -> Report:
    """The checks after :func:`device_check` that need no plan: a real step, the disk (the
    data the plan reads is checked once the plan is known, :func:`check_data`)."""
    check_step(report, report.device, str((config.get("data") or {}).get("root") or "data"))
    check_disk(report, results, min_free_gb)
    return report
