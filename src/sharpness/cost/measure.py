"""Step times from the real training step: ``sharpness cost measure``.

For each distinct (model, data set, width, per-device batch, optimizer, precision) a profile's
runs use, one short training run through the engine itself (:func:`sharpness.train.engine.train`:
its data pipeline, augmentation, determinism settings, channels-last and autocast choices, and
the optimizer's own passes per step), timed from the end of the ``warmup``-th step to the end
of ``warmup + steps`` (each step ends with the loss read back to the host, so the device has
finished it). On CUDA the peak memory of the run is recorded too (the campaign packs jobs on
a GPU by it). The entries go to a YAML file (default ``sharpness/cost/measured.yaml``) with
the device, the commit, the training code's fingerprint (``code``:
:func:`sharpness.cost.price.training_code`), the PyTorch version and the date;
:func:`sharpness.cost.price` prices a matching job from it, per forward+backward pass
(``step_seconds / passes``), in any method, while the training code is the same (and, on a
GPU, the GPU is the one measured: :func:`sharpness.cost.price.unusable`).

A full-batch run (eos, the SAM bridge) is timed as a mini-batch SGD step of its network at the
per-device batch its price uses (a full-batch step is that many such passes).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sharpness.cost.plan import Job, passes_per_step
from sharpness.cost.price import measured_throughputs, training_code
from sharpness.data.checkout import clean_env
from sharpness.errors import ConfigError
from sharpness.runs.environment import SAFE_GIT_OPTIONS

#: keys of a measured entry that identify what it prices
KEY_FIELDS = ("model", "dataset", "width", "batch", "optimizer", "precision")
#: the recipes a step is timed in: as configured (the profile's precision, fp32 for the paper
#: profile, and its deterministic kernels) and the fast one (bf16 autocast, cuDNN autotuning,
#: no deterministic kernels); prices are read from the configured one run alone
RECIPES: dict[str, dict[str, Any]] = {"configured": {}, "fast": {"bf16": True,
                                                                 "deterministic": False}}
#: how many copies of a run share one GPU in a packed measurement
PACKS = (1, 2, 4, 8)
#: train-config keys a measurement keeps from a run's config (the rest is the run's schedule,
#: logging and study keys, which do not change what one step costs)
KEPT = ("dataset", "data_root", "model", "width", "model_kwargs", "optimizer", "opt_hparams",
        "loss", "label_smoothing", "augment", "normalize", "momentum", "weight_decay",
        "nesterov", "lr", "deterministic", "channels_last", "data_on_device", "loader_workers",
        "freeze_bn", "drop_last")


class _Enough(Exception):  # noqa: N818 - control flow: the timed steps are done
    """Raised by the step hook once the timed steps are done."""


def job_key(job: Job, precision: str) -> tuple[Any, ...]:
    """What a measurement of ``job`` in ``precision`` is filed under."""
    return (job.model, job.dataset, float(job.width), job.shape_key[-1], job.optimizer,
            precision)


def measure_config(job: Job, *, precision: str, device: str, data_root: str | None
                   ) -> dict[str, Any]:
    """The train config one measurement of ``job`` runs: the job's own settings (or, for a
    full-batch job, its network under mini-batch SGD), one process at the per-device batch,
    one epoch, no checkpoints."""
    batch = job.shape_key[-1]
    base = {k: v for k, v in job.config.items() if k in KEPT} if job.config else {
        "dataset": job.dataset, "model": job.model, "width": job.width,
        "model_kwargs": dict(job.model_kwargs), "optimizer": "sgd", "lr": 0.01}
    if data_root is not None:
        base["data_root"] = data_root
    return {**base, "batch_size": batch, "epochs": 1, "gpus": 1, "device": device,
            "bf16": precision == "bf16", "checkpoint_every": 0, "eval_every": 0,
            "test_size": min(batch, 64), "seed": 0}


def time_steps(cfg: dict[str, Any], *, warmup: int, steps: int, autotune: bool = False
               ) -> tuple[float, float | None]:
    """(seconds per step after ``warmup`` steps, peak CUDA memory in MB or None) of the engine
    training ``cfg`` (its ``train_size`` set to the batches needed); ``autotune``: cuDNN's
    benchmark mode on (the fast recipe). The CUDA cache is emptied afterwards, so that the
    next shape is measured on an empty device."""
    import torch  # lazy: torch

    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = bool(autotune)
    try:
        return _time_steps(cfg, warmup=warmup, steps=steps)
    finally:
        torch.backends.cudnn.benchmark = before
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def _one(args: tuple[dict[str, Any], int, int, bool]) -> tuple[float, float | None]:
    cfg, warmup, steps, autotune = args
    return time_steps(cfg, warmup=warmup, steps=steps, autotune=autotune)


def packed_steps(cfg: dict[str, Any], copies: int, *, warmup: int, steps: int,
                 autotune: bool = False, pools: dict[int, Any] | None = None
                 ) -> tuple[float, float | None]:
    """(mean seconds per step of each run, largest peak memory) with ``copies`` runs of
    ``cfg`` at once on one device, each in its own process (started together; the warm-up
    steps absorb the start-up). ``copies`` = 1 runs in this process. ``pools``: worker pools
    by size, kept across shapes so that each size pays its processes' start once (the
    caller closes them)."""
    if copies == 1:
        return time_steps(cfg, warmup=warmup, steps=steps, autotune=autotune)
    import multiprocessing as mp

    pools = {} if pools is None else pools
    if copies not in pools:
        pools[copies] = mp.get_context("spawn").Pool(copies)
    got = pools[copies].map(_one, [(cfg, warmup, steps, autotune)] * copies, chunksize=1)
    peaks = [p for _, p in got if p is not None]
    return sum(s for s, _ in got) / copies, (max(peaks) if peaks else None)


def _time_steps(cfg: dict[str, Any], *, warmup: int, steps: int
                ) -> tuple[float, float | None]:
    import torch  # lazy: torch

    from sharpness.train.engine import train  # lazy: torch
    from sharpness.train.hooks import TrainHooks  # lazy: torch

    need = warmup + steps
    cfg = {**cfg, "train_size": need * int(cfg["batch_size"]), "drop_last": True}
    stamps: list[float] = []

    def on_step(_info: Any) -> None:
        stamps.append(time.perf_counter())
        if len(stamps) >= need:
            raise _Enough

    cuda = str(cfg["device"]).startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    with tempfile.TemporaryDirectory(prefix="sharpness-measure-") as tmp, \
            contextlib.suppress(_Enough):
        train(cfg, tmp, hooks=TrainHooks(on_step_end=on_step), progress=False)
    if len(stamps) < need:
        raise ConfigError(f"sharpness cost measure: {cfg['model']} on {cfg['dataset']} ran "
                          f"{len(stamps)} of {need} steps (a training set smaller than "
                          f"{need} batches of {cfg['batch_size']}?)")
    seconds = (stamps[-1] - stamps[warmup - 1]) / steps if warmup else \
        (stamps[-1] - stamps[0]) / max(steps - 1, 1)
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else None
    return seconds, peak


def device_name(device: str) -> str:
    """The GPU's name, or ``cpu``."""
    if device.startswith("cuda"):
        import torch  # lazy: torch

        return str(torch.cuda.get_device_name(torch.device(device)))
    return "cpu"


def commit() -> str:
    """The package's checkout's commit (``unknown`` outside a git checkout); git asked in
    that folder with the safe options, never in the caller's working folder."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), *SAFE_GIT_OPTIONS, "rev-parse", "--short",
                              "HEAD"], cwd=here, env=clean_env(), capture_output=True,
                             text=True, check=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def torch_version() -> str:
    """The PyTorch version the step times were measured with (written beside each)."""
    import torch  # lazy: torch

    return str(torch.__version__)


def measure(jobs: Iterable[Job], *, device: str, precisions: Sequence[str] = ("fp32",),
            warmup: int = 3, steps: int = 10, data_root: str | None = None,
            log: Any = None, recipes: Sequence[str] = ("configured",),
            packs: Sequence[int] = (1,), sink: Any = None) -> list[dict[str, Any]]:
    """One entry per distinct (model, data set, width, batch, optimizer, precision) of
    ``jobs`` in each of ``recipes`` (:data:`RECIPES`; the configured one in each of
    ``precisions``, the fast one in bf16) and each count of runs packed on the device
    (``packs``); ``log(text)`` reports each as it is measured (see the module) and
    ``sink(entries)`` is given every entry so far after each (a run cut short by a wall-time
    limit keeps what it measured)."""
    if warmup < 1 or steps < 1:
        raise ConfigError("sharpness cost measure: --warmup and --steps must be >= 1")
    unknown = set(recipes) - set(RECIPES)
    if unknown or not all(int(k) >= 1 for k in packs):
        raise ConfigError(f"sharpness cost measure: recipes {sorted(RECIPES)} and packs >= 1 "
                          f"(got {list(recipes)}, {list(packs)})")
    name, rev, version = device_name(device), commit(), torch_version()
    today = dt.date.today().isoformat()
    done: dict[tuple[Any, ...], dict[str, Any]] = {}
    pools: dict[int, Any] = {}
    try:
        _measure_all(jobs, done, pools, device=device, precisions=precisions, warmup=warmup,
                     steps=steps, data_root=data_root, log=log, recipes=recipes, packs=packs,
                     sink=sink, stamp={"device": name, "commit": rev, "code": training_code(),
                                             "date": today, "torch": version})
    finally:
        for pool in pools.values():
            pool.close()
            pool.join()
    return list(done.values())


def _measure_all(jobs: Iterable[Job], done: dict[tuple[Any, ...], dict[str, Any]],
                 pools: dict[int, Any], *, device: str, precisions: Sequence[str],
                 warmup: int, steps: int, data_root: str | None, log: Any,
                 recipes: Sequence[str], packs: Sequence[int], sink: Any,
                 stamp: dict[str, str]) -> None:
    version = stamp["torch"]
    for job in jobs:
        for recipe in recipes:
            for precision in (precisions if recipe == "configured" else ("bf16",)):
                for k in packs:
                    key = (*job_key(job, precision), recipe, int(k))
                    if key in done:
                        continue
                    cfg = {**measure_config(job, precision=precision, device=device,
                                            data_root=data_root), **RECIPES[recipe]}
                    seconds, peak = packed_steps(cfg, int(k), warmup=warmup, steps=steps,
                                                 autotune=recipe == "fast", pools=pools)
                    passes = passes_per_step(cfg["optimizer"], cfg.get("opt_hparams") or {})
                    entry = {**stamp,
                             **dict(zip(KEY_FIELDS, key, strict=False)),
                             "model_kwargs": dict(job.model_kwargs), "passes": passes,
                             "recipe": recipe, "packed": int(k),
                             "step_seconds": round(seconds, 6), "warmup": warmup,
                             "steps": steps}
                    if peak is not None:
                        entry["gpu_mem_mb"] = round(peak)
                    done[key] = entry
                    if log is not None:
                        log(f"{key}: {seconds * 1e3:.2f} ms/step (torch {version})")
                    if sink is not None:
                        sink(list(done.values()))


def write(entries: list[dict[str, Any]], path: str | Path, *, note: str = "") -> Path:
    """Write the entries as ``measured.yaml`` (a comment head saying what they are)."""
    import yaml

    from sharpness.io import atomic_write_text

    devices = sorted({e["device"] for e in entries}) or ["none"]
    head = (f"# Step times measured by `sharpness cost measure` on {', '.join(devices)} "
            f"(the engine's own training step; see sharpness.cost.measure).\n")
    if note:
        head += "".join(f"# {line}\n" for line in note.splitlines())
    path = Path(path)
    atomic_write_text(path, head + yaml.safe_dump(entries, sort_keys=False))
    measured_throughputs.cache_clear()  # a plan in this process reads the new entries
    return path
