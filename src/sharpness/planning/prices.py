"""The planner's price of each run, with what it rests on and its upper limit.

:func:`run_prices`: GPU-hours of each run: recorded on this machine where the run's folder
says how long it took on CUDA with the settings planned now (:func:`recorded_hours`), else
``sharpness cost``'s price (measured step times on CUDA, otherwise the analytic estimate; a
full-batch eos run at its expected steps, :mod:`sharpness.cost.eos_steps`), each labelled,
and the price of each run at its step caps, the upper limit printed beside the expected one.
A campaign resumed in a later allocation, or re-planned after packing freed budget
(``finished_free``), prices a run that finished here at 0 and one cut mid-way at the share of
its work left after its last checkpoint: a lesam run's epochs (:func:`epochs_done`), an eos
setting's GD steps, and a Grad-CAM group's runs each at 0 or at its epochs left
(:mod:`sharpness.planning.resumed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharpness.cost import plan_jobs, price
from sharpness.jobs import build_plan
from sharpness.lesam.experiments import RUNS_DIR
from sharpness.lesam.jobs import train_runs
from sharpness.planning.restrict import RunKey
from sharpness.planning.resumed import (
    FINAL,
    Left,
    Memo,
    epochs_kept,
    finished_record,
    left_here,
)


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
    return epochs_kept(_run_folder(job, results), planned)


def _finished_record(job: Any, planned: Mapping[str, Any] | None,
                     results: Path) -> dict[str, Any] | None:
    """The ``provenance.json`` of a lesam training run that finished (``ok`` or
    ``diverged``: the workflow reuses either) with the settings planned now, else None."""
    if job.paper != "lesam" or planned is None:
        return None
    return finished_record(_run_folder(job, results), planned)


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
    paid for it already, and carries that spend over), and one cut here the share of its
    work left after its checkpoints (:func:`_left`), each price's ``source`` saying so."""

    jobs = [j for j in plan_jobs(dict(config)) if only is None or (j.paper, j.run) in only]
    plan = build_plan(config)
    planned = {rid: r.config for rid, r in train_runs(plan).items()} \
        if config.get("lesam") else {}
    out = Prices({}, {}, {})
    todo, left = [], {}
    memo = Memo()  # each Grad-CAM group's folder read once in this pass
    for job in jobs:
        key = (job.paper, job.run)
        took = recorded_hours(job, planned.get(job.run), Path(results))
        here = _left(job, planned.get(job.run), plan, Path(results), memo) \
            if finished_free else None
        if finished_free and finished(job, planned.get(job.run), Path(results)):
            out.hours[key] = out.caps[key] = 0.0
            paid = "" if took is None else f"{took:.3g} GPU-hours "
            out.source[key] = f"finished on this machine ({paid}paid earlier): 0 now"
        elif here is not None and here.share == 0:
            out.hours[key] = out.caps[key] = 0.0
            out.source[key] = here.why
        elif took is not None:
            out.hours[key] = out.caps[key] = took
            out.source[key] = "recorded on this machine"
        else:
            todo.append(job)
            if here is not None:
                left[key] = here
    for p in price(todo, method=method, tflops=tflops, device=device, rates=rates,
                   measured=measured):
        key = (p.job.paper, p.job.run)
        out.hours[key], out.source[key], out.caps[key] = p.gpu_hours, p.basis, p.cap_hours
        if key in left:  # cut mid-way or part of a group finished: pays what is left
            out.hours[key] *= left[key].share
            out.caps[key] *= left[key].at_caps
            out.source[key] += f"; {left[key].why}"
    return out


def _left(job: Any, planned: Mapping[str, Any] | None, plan: Any,
          results: Path, memo: Memo | None = None) -> Left | None:
    """What a run still costs a resumed campaign (:mod:`sharpness.planning.resumed`): a
    lesam run cut mid-way at its epochs left, an eos setting or a Grad-CAM run as
    :func:`sharpness.planning.resumed.left_here` reads its folder; None: in full."""
    done = epochs_done(job, planned, results)
    if done and planned is not None:
        epochs = int(planned["epochs"])
        return Left(max(epochs - done, 0) / epochs,
                    f"cut here at epoch {done} of {epochs}: the epochs left")
    return left_here(job, plan, results, memo)
