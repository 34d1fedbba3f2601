"""The planner's price of each run, with what it rests on and its upper limit.

:func:`run_prices`: GPU-hours of each run: recorded on this machine where the run's folder
says how long it took on CUDA with the settings planned now (:func:`recorded_hours`), else
``sharpness cost``'s price (measured step times on CUDA, otherwise the analytic estimate; a
full-batch eos run at its expected steps, :mod:`sharpness.cost.eos_steps`), each labelled,
and the price of each run at its step caps, the upper limit printed beside the expected one.
A campaign resumed in a later allocation (``finished_free``) prices a run that finished here
at 0 and one cut mid-way at the share of its epochs left after its last checkpoint
(:func:`epochs_done`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharpness.cost import plan_jobs, price
from sharpness.jobs import build_plan
from sharpness.lesam.experiments import RUNS_DIR
from sharpness.lesam.jobs import train_runs
from sharpness.planning.restrict import RunKey

#: settings a recorded run must share with the planned one before its time is reused
CORE_KEYS = ("model", "dataset", "optimizer", "epochs", "batch_size", "seed")
#: settings that say where a run read its inputs, not what it computed: a variant's runs
#: name the shared data folder from their own (``../../data``, sharpness.config.variant)
PLACE_KEYS = ("data_root",)
#: a run folder's files (the names of :mod:`sharpness.train.layout`, whose package imports
#: torch; a test checks they agree)
CHECKPOINT, METRICS, FINAL, CONFIG = "checkpoint.pt", "metrics.jsonl", "final.json", "config.json"


def _same_settings(params: Mapping[str, Any], planned: Mapping[str, Any]) -> bool:
    """Whether a run folder's settings (the engine's validated config, as its records hold
    it: defaults filled in) are the planned ones, validated the same way: the core settings
    present and every setting both hold equal. A record whose ``opt_hparams`` name only
    those its config gave (the optimizer's defaults left out) is compared as its optimizer's
    spec resolves them, as the planned ones are."""
    from sharpness.optim.spec import optimizer_spec
    from sharpness.train.config import validate_config  # lazy: torch (its package imports it)

    try:
        wanted = json.loads(json.dumps(validate_config(dict(planned)), default=str))
        if isinstance(params.get("opt_hparams"), dict) and "optimizer" in params:
            params = {**params, "opt_hparams": optimizer_spec(str(params["optimizer"])).resolve(
                params["opt_hparams"])}
    except (ValueError, TypeError, KeyError):  # not a valid run config: nothing matches it
        return False
    return not (any(k not in params or params[k] != wanted.get(k, params[k])
                    for k in CORE_KEYS)
                or any(params[k] != v for k, v in wanted.items()
                       if k in params and k not in PLACE_KEYS))


def _run_folder(job: Any, results: Path) -> Path:
    return results / Path(RUNS_DIR).relative_to("results") / job.run


def epochs_done(job: Any, planned: Mapping[str, Any] | None, results: Path) -> int:
    """Epochs a lesam training run cut mid-way here keeps: its folder holds a checkpoint and
    no final record, its ``config.json`` has the settings planned now, and its metrics reach
    epoch ``e``; the checkpoint is taken as the last multiple of ``checkpoint_every`` below
    ``e`` (one interval short when ``e`` is a multiple: the run may have been cut between
    that epoch's row and its checkpoint), so the price left is never too low. 0 otherwise
    (the run starts over, or is not a run cut here)."""
    if job.paper != "lesam" or planned is None:
        return 0
    folder = _run_folder(job, results)
    if not (folder / CHECKPOINT).is_file() or (folder / FINAL).exists():
        return 0
    try:
        params = json.loads((folder / CONFIG).read_text())
        rows = [json.loads(line) for line in (folder / METRICS).read_text().splitlines()
                if line.strip()]
    except (OSError, ValueError):
        return 0
    if not isinstance(params, dict) or not _same_settings(params, planned):
        return 0
    every = int(params.get("checkpoint_every") or 0)
    reached = max((int(r.get("epoch", 0)) for r in rows
                   if isinstance(r, dict) and r.get("kind") == "epoch"), default=0)
    if every <= 0 or reached <= 0:
        return 0
    return (reached - 1) // every * every


def _finished_record(job: Any, planned: Mapping[str, Any] | None,
                     results: Path) -> dict[str, Any] | None:
    """The ``provenance.json`` of a lesam training run that finished (``ok`` or
    ``diverged``: the workflow reuses either) with the settings planned now, else None."""
    if job.paper != "lesam" or planned is None:
        return None

    path = _run_folder(job, results) / "provenance.json"
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("status") not in ("ok", "diverged"):
        return None
    return record if _same_settings(record.get("params") or {}, planned) else None


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
    it (``--finished-free``, a tiny campaign's CPU runs included). Its ``final.json`` must be
    there too: a run that finished in the instant before a cut is one Snakemake never marked
    complete, and the next call deletes that output as incomplete and trains the run again
    (its ``provenance.json``, not an output, still says ``ok``)."""
    return _finished_record(job, planned, results) is not None and \
        (_run_folder(job, results) / FINAL).is_file()


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
    planned = {rid: r.config for rid, r in train_runs(build_plan(config)).items()} \
        if config.get("lesam") else {}
    out = Prices({}, {}, {})
    todo, left = [], {}
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
            done = epochs_done(job, planned.get(job.run), Path(results)) if finished_free \
                else 0
            if done:
                left[key] = (done, int(planned[job.run]["epochs"]))
    for p in price(todo, method=method, tflops=tflops, device=device, rates=rates,
                   measured=measured):
        key = (p.job.paper, p.job.run)
        out.hours[key], out.source[key], out.caps[key] = p.gpu_hours, p.basis, p.cap_hours
        if key in left:  # cut mid-way: resumes from its checkpoint, pays the epochs left
            done, epochs = left[key]
            share = max(epochs - done, 0) / epochs
            out.hours[key] *= share
            out.caps[key] *= share
            out.source[key] += f"; cut here at epoch {done} of {epochs}: the epochs left"
    return out
