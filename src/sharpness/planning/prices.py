"""The planner's price of each run, with what it rests on and its upper limit.

:func:`run_prices`: GPU-hours of each run: recorded on this machine where the run's folder
says how long it took on CUDA with the settings planned now (:func:`recorded_hours`), else
``sharpness cost``'s price (measured step times on CUDA, otherwise the analytic estimate; a
full-batch eos run at its expected steps, :mod:`sharpness.cost.eos_steps`), each labelled,
and the price of each run at its step caps, the upper limit printed beside the expected one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharpness.cost import plan_jobs, price
from sharpness.lesam.experiments import RUNS_DIR, training_runs
from sharpness.planning.restrict import RunKey

#: settings a recorded run must share with the planned one before its time is reused
CORE_KEYS = ("model", "dataset", "optimizer", "epochs", "batch_size", "seed")


def _finished_record(job: Any, planned: Mapping[str, Any] | None,
                     results: Path) -> dict[str, Any] | None:
    """The ``provenance.json`` of a lesam training run that finished (``ok`` or
    ``diverged``: the workflow reuses either) with the settings planned now (the core
    settings present and every setting both records hold equal), else None."""
    if job.paper != "lesam" or planned is None:
        return None

    path = results / Path(RUNS_DIR).relative_to("results") / job.run / "provenance.json"
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    params = record.get("params") or {}
    if record.get("status") not in ("ok", "diverged"):
        return None
    wanted = json.loads(json.dumps(dict(planned), default=str))
    if any(k not in params or params[k] != wanted.get(k, params[k]) for k in CORE_KEYS) or \
            any(params[k] != v for k, v in wanted.items() if k in params):
        return None
    return record


def recorded_hours(job: Any, planned: Mapping[str, Any] | None, results: Path) -> float | None:
    """GPU-hours a lesam training run took on this machine: ``wall_s`` x its GPUs from the
    run folder's ``provenance.json``, where the run finished ``ok`` on CUDA with the
    settings planned now. None otherwise: a CPU run of the quick profile never prices a
    paper run."""
    record = _finished_record(job, planned, results)
    if record is None or record.get("status") != "ok" or \
            not str(record.get("device_used", "")).startswith("cuda"):
        return None
    try:
        return float(record["wall_s"]) * job.gpus / 3600.0
    except (KeyError, TypeError, ValueError):
        return None


def finished(job: Any, planned: Mapping[str, Any] | None, results: Path) -> bool:
    """Whether a lesam training run finished here with the settings planned now, on any
    device: the workflow will not train it again, so a resumed campaign pays nothing for
    it (``--finished-free``, a tiny campaign's CPU runs included)."""
    return _finished_record(job, planned, results) is not None


@dataclass
class Prices:
    """GPU-hours per run (``hours``: what the plan spends, at expected steps for a full-batch
    eos run that has them), what each rests on (``source``) and each run at its step caps
    (``caps``: equal to ``hours`` for a run of fixed length or one priced at its caps)."""

    hours: dict[RunKey, float]
    source: dict[RunKey, str]
    caps: dict[RunKey, float]


def run_prices(config: Mapping[str, Any], *, method: str, tflops: float = 40.0,
               device: Any = None, results: str | Path = "results",
               only: frozenset[RunKey] | None = None,
               rates: Mapping[str, float] | None = None,
               measured: str | None = None, finished_free: bool = False) -> Prices:
    """The :class:`Prices` of every run (or of the runs ``only`` names): its recorded time
    on this machine, step times measured (on which GPU and when), or the analytic estimate
    at the rate of its precision (``rates``, TFLOP/s per precision). ``finished_free``: a
    run that finished here costs nothing now (a campaign resumed in a later allocation has
    paid for it already, and carries that spend over)."""

    jobs = [j for j in plan_jobs(dict(config)) if only is None or (j.paper, j.run) in only]
    planned = {rid: r["config"] for rid, r in training_runs(config["lesam"]).items()} \
        if config.get("lesam") else {}
    out = Prices({}, {}, {})
    todo = []
    for job in jobs:
        key = (job.paper, job.run)
        took = recorded_hours(job, planned.get(job.run), Path(results))
        if finished_free and finished(job, planned.get(job.run), Path(results)):
            out.hours[key] = out.caps[key] = 0.0
            paid = "" if took is None else f"{took:.3g} GPU-hours "
            out.source[key] = f"finished on this machine ({paid}paid earlier): 0 now"
        elif took is not None:
            out.hours[key] = out.caps[key] = took
            out.source[key] = "recorded on this machine"
        else:
            todo.append(job)
    for p in price(todo, method=method, tflops=tflops, device=device, rates=rates,
                   measured=measured):
        key = (p.job.paper, p.job.run)
        out.hours[key], out.source[key], out.caps[key] = p.gpu_hours, p.basis, p.cap_hours
    return out
