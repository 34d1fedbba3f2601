"""What a campaign resumed here still pays for a run: the share of its price left.

A campaign resumed in a later allocation, or re-planned after packing freed budget
(``run_prices(..., finished_free=True)``), pays only for the work the workflow will still do.
:func:`left_here` reads that from the build's ``results`` folder, the way each job's own
resume logic reads it:

* a lesam training run (:func:`sharpness.planning.prices.finished`,
  :func:`sharpness.planning.prices.epochs_done`): 0 when it finished with the planned
  settings, the epochs left after its last checkpoint when it was cut;
* an eos setting (one ``eos_setting`` job, or one variant of the ``eos_ablations`` job):
  0 when its job finished from the job file the plan writes now (every output of the job
  there and sealed, each setting's record naming that file's SHA-256: Snakemake then has
  nothing to rerun); when it was cut (no ``sweep.json``, or one its job had not sealed: a
  setting that finished in an ``eos run-many`` job cut before its end) after its gradient
  flow finished (:func:`finished_flow`), the price less the flow's part, times the share of
  its steps left, a finished GD run counting whole and a cut one up to its checkpoint
  (:func:`eos_steps_kept`); in full otherwise, a setting whose sealed ``sweep.json``
  exists but whose job runs again included (Snakemake deletes a rerun job's outputs
  first, and a removed sealed ``sweep.json`` starts its setting over:
  :mod:`sharpness.runs.restart`);
* an optimizer of the SAM-at-the-edge-of-stability bridge (one ``bridges_sam_eos_run`` job
  trains every optimizer's grid): 0 when its job finished from the job file the plan writes
  now; when the sweep was cut (no ``sweep.json``) after its gradient flow, the share of the
  optimizer's steps left, counted as an eos setting's; in full otherwise;
* a Grad-CAM run (one of a ``gradcam_train`` job's groups, a data set x optimizer): 0 when
  the job finished from the job file the plan writes now (every group's ``runs.json`` there
  and sealed, each group's record naming that file's SHA-256); when no ``runs.json`` of its
  group exists, 0 when the run finished with the planned settings (the engine reuses it), the
  epochs left after its checkpoint when it was cut; in full otherwise. Each run of a group is
  priced on its own, so the group costs the share of its runs not yet finished.

Settings are compared as the engine validates them (:func:`same_settings`); the engine's own
cache key also holds the code's fingerprint, which this does not check: a code change that
makes the workflow train a run again is priced at 0 here. A checkpoint is taken at the last
multiple of ``checkpoint_every`` the metrics prove was reached and saved, so a price left is
never too low.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharpness.eos.config import sweep_path
from sharpness.eos.jobs import RESULTS as EOS_RESULTS
from sharpness.eos.jobs import planned_settings
from sharpness.eos.setting import resolve_setting
from sharpness.gradcam.jobs import runs_folder
from sharpness.gradcam.runs import run_config, run_name
from sharpness.jobs import Job as PlanJob
from sharpness.jobs import Plan
from sharpness.jobs.files import config_text
from sharpness.runs.cache import read_key
from sharpness.runs.restart import removed_result
from sharpness.runs.seal import FILES_FIELD, damage

#: settings a recorded run must share with the planned one before its time is reused
CORE_KEYS = ("model", "dataset", "optimizer", "epochs", "batch_size", "seed")
#: settings that say where a run read its inputs, not what it computed: a variant's runs
#: name the shared data folder from their own (``../../data``, sharpness.config.variant)
PLACE_KEYS = ("data_root",)
#: a run folder's files (the names of :mod:`sharpness.train.layout`, whose package imports
#: torch; a test checks they agree)
CHECKPOINT, METRICS, FINAL, CONFIG = "checkpoint.pt", "metrics.jsonl", "final.json", "config.json"
#: a folder's provenance record, an eos setting's result and a Grad-CAM group's result
PROVENANCE, SWEEP, RUNS = "provenance.json", "sweep.json", "runs.json"


@dataclass(frozen=True)
class Left:
    """The share of a run's price still to pay (0: finished here) and why, in words that go
    into its price's ``source``; ``cap_share``: the share of its price at its caps, where it
    differs (an eos setting whose flow finished: the flow's part of the two prices differs)."""

    share: float
    why: str
    cap_share: float | None = None

    @property
    def at_caps(self) -> float:
        """The share of the price at the caps still to pay."""
        return self.share if self.cap_share is None else self.cap_share


def same_settings(params: Mapping[str, Any], planned: Mapping[str, Any]) -> bool:
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


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _rows(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError):
        return []
    return [r for r in rows if isinstance(r, dict)]


def finished_record(folder: Path, planned: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``provenance.json`` of a training run in ``folder`` that finished (``ok`` or
    ``diverged``: the engine reuses either) with the ``planned`` settings, else None."""
    record = _json(folder / PROVENANCE)
    if not isinstance(record, dict) or record.get("status") not in ("ok", "diverged"):
        return None
    return record if same_settings(record.get("params") or {}, planned) else None


def epochs_kept(folder: Path, planned: Mapping[str, Any]) -> int:
    """Epochs a mini-batch training run cut mid-way in ``folder`` keeps: a checkpoint and no
    final record, its ``config.json`` has the ``planned`` settings and its metrics reach
    epoch ``e``; the checkpoint is taken as the last multiple of ``checkpoint_every`` below
    ``e`` (one interval short when ``e`` is a multiple: the run may have been cut between
    that epoch's row and its checkpoint). 0 otherwise (the run starts over)."""
    if not (folder / CHECKPOINT).is_file() or (folder / FINAL).exists():
        return 0
    params = _json(folder / CONFIG)
    if not isinstance(params, dict) or not same_settings(params, planned):
        return 0
    every = int(params.get("checkpoint_every") or 0)
    reached = max((int(r.get("epoch", 0)) for r in _rows(folder / METRICS)
                   if r.get("kind") == "epoch"), default=0)
    if every <= 0 or reached <= 0:
        return 0
    return (reached - 1) // every * every


def _steps_kept(folder: Path, planned: Mapping[str, Any], cap: int) -> int:
    """Steps of its ``cap`` a full-batch run in ``folder`` need not run again when its job
    runs again: the whole cap when it finished with the ``planned`` settings (the engine
    reuses it, whether it stopped at its loss goal or at the cap), those up to its last
    checkpoint when it was cut (its metrics' last step row ``t`` proves the checkpoint at
    the last multiple of ``checkpoint_every`` up to ``t``: the loop saves one after the step
    that reaches it, before the next row), 0 otherwise."""
    params = _json(folder / CONFIG)
    if not isinstance(params, dict) or not same_settings(params, planned):
        return 0
    if (folder / FINAL).is_file():
        final = _json(folder / FINAL)
        return cap if isinstance(final, dict) and isinstance(final.get("steps"), int) else 0
    every = int(params.get("checkpoint_every") or 0)
    if not (folder / CHECKPOINT).is_file() or every <= 0:
        return 0
    reached = max((int(r.get("step", 0)) for r in _rows(folder / METRICS)
                   if r.get("kind") == "step"), default=0)
    return min(reached // every * every, cap)


def finished_flow(folder: Path, setting: Mapping[str, Any]) -> float | None:
    """The ``eta_c`` of the gradient flow that finished in ``folder`` when the sweep of
    ``setting`` reuses it: its ``flow/flow.json`` sealed and its cache key the one the
    setting's flow has (:func:`sharpness.eos.sweep.flow_cache_key`, at the data folder it was
    computed from); else None."""
    from sharpness.eos.sweep import flow_cache_key  # lazy: torch, only where a flow ran here

    flow, stored = _json(folder / "flow" / "flow.json"), read_key(folder / "flow")
    if not isinstance(flow, dict) or not isinstance(flow.get("eta_c"), int | float) or \
            damage(folder / "flow", "flow.json") is not None or not isinstance(stored, dict):
        return None
    root = str((stored.get("settings") or {}).get("data_root", "data"))
    if stored.get("digest") != flow_cache_key(dict(setting), root)["digest"]:
        return None
    return float(flow["eta_c"])


def eos_steps_kept(setting: Mapping[str, Any], runs: Path, eta_c: float,
                   engine: Mapping[str, Any] | None = None) -> int:
    """GD steps of its caps an eos sweep cut mid-way need not run again: over the run
    folders in ``runs`` of its grid (its learning rates from its finished gradient flow's
    ``eta_c``), each of ``max_steps``: a finished run's all, a cut one's up to its
    checkpoint. ``engine``: settings over each run's engine config (the bridge's optimizer
    and its hyper-parameters)."""
    from sharpness.eos.sweep import (  # lazy: torch, only where a setting was cut here
        engine_config,
        learning_rates,
        run_name,
    )

    s = resolve_setting(dict(setting))
    kept = 0
    for point in learning_rates(s, eta_c):
        run = runs / run_name(point["lr"])
        params = _json(run / CONFIG)
        root = params.get("data_root", "data") if isinstance(params, dict) else "data"
        planned = {**engine_config(s, point["lr"], root), **(engine or {})}
        kept += _steps_kept(run, planned, int(s["max_steps"]))
    return kept


def file_sha256(content: Any) -> str:
    """The SHA-256 of the job file the plan writes for ``content`` (:func:`config_text`):
    what a job records as its ``config_file``."""
    return hashlib.sha256(config_text(content).encode()).hexdigest()


def _in(results: Path, path: str) -> Path:
    """A plan path (``results/...``) in the build's ``results`` folder."""
    return results / Path(path).relative_to("results")


def job_finished(job: PlanJob, results: Path) -> bool:
    """Whether plan job ``job`` finished from the job file the plan writes now: every output
    there, matching the hash sealed in its folder, and each folder's record ``ok`` and naming
    that file's SHA-256. Snakemake reruns no such job (it compares the file, not the hash;
    the same bytes are the same file)."""
    sha = file_sha256(job.config)
    for out in (_in(results, o) for o in job.outputs):
        record = _json(out.parent / PROVENANCE)
        sealed = damage(out.parent, out.name) is None
        if not sealed or not isinstance(record, dict) or \
                record.get("status") != "ok" or \
                (record.get("config_file") or {}).get("sha256") != sha:
            return False
    return True


def eos_left(name: str, plan: Plan, results: Path, priced: Any) -> Left | None:
    """What eos setting ``name`` still costs (None: in full): see the module's docstring.
    ``priced`` is its priced job (:class:`sharpness.cost.plan.Job`): its caps' steps
    (``max_steps`` x learning rates) are the whole the GD steps kept are a share of (never
    too low: the runs' expected steps are fewer), and a finished gradient flow takes its
    own share off the price (:meth:`~sharpness.cost.plan.Job.flow_share`)."""
    key, setting = planned_settings(plan)[name]
    rule, _, jid = key.partition("/")
    job = plan.job(rule, jid)
    folder = _in(results, sweep_path(name, EOS_RESULTS)).parent
    if (folder / SWEEP).exists():
        if job_finished(job, results):
            return Left(0.0, "finished on this machine: 0 now")
        if not unsealed(folder, SWEEP):
            return None
        # written by a job cut before its end (`eos run-many` seals its settings together
        # when the last has finished): Snakemake deletes it first, and the setting resumes
    elif removed_result(folder, SWEEP):
        return None
    cap_steps = int(priced.cap[0])
    eta_c = finished_flow(folder, setting)
    if cap_steps <= 0 or eta_c is None:
        return None
    kept = min(eos_steps_kept(setting, folder / "runs", eta_c), cap_steps)
    if kept == cap_steps:
        return Left(0.0, "every run finished on this machine before its job was cut: 0 now")
    runs_left = (cap_steps - kept) / cap_steps
    flow, flow_at_caps = priced.flow_share()
    return Left((1 - flow) * runs_left,
                f"cut here after its gradient flow, at step {kept} of {cap_steps}: the steps "
                "left", cap_share=(1 - flow_at_caps) * runs_left)


def unsealed(folder: Path, name: str) -> bool:
    """Whether the file ``name`` of ``folder`` is there while the folder's record holds no
    hash of it: written by a job cut before it sealed its results, not a finished result
    (which :func:`sharpness.runs.seal.seal` records when its job ends)."""
    files = (read_key(folder) or {}).get(FILES_FIELD)
    return (folder / name).is_file() and not (isinstance(files, dict) and name in files)


def gradcam_runs(plan: Plan) -> dict[str, tuple[PlanJob, str, str, float, int]]:
    """Each Grad-CAM run the cost model prices (``gradcam/<data>/<opt>/a<alpha>/s<seed>``,
    :func:`sharpness.cost.plan.gradcam_jobs`) -> its ``gradcam_train`` job, data set,
    optimizer, init scale and seed."""
    out = {}
    for key, job in plan.of_rule("gradcam_train").items():
        for opt in job.config["optimizers"]:
            for alpha in job.config["alphas"]:
                for seed in job.config["seeds"]:
                    out[f"gradcam/{key}/{opt}/a{alpha}/s{seed}"] = (job, key, opt, alpha, seed)
    return out


@dataclass(frozen=True)
class _Group:
    """What one Grad-CAM group's folder holds, read once per pricing (:class:`Memo`)."""

    folder: Path  # the group's runs folder in the build
    whole: bool  # its job finished from the job file the plan writes now
    started: bool  # its runs are trained here and its job does not start over
    planned: dict[tuple[float, int], dict[str, Any]]  # (alpha, seed) -> the run's settings
    done: frozenset[tuple[float, int]]  # runs finished here with the planned settings


class Memo:
    """What one pricing pass has read already (:func:`left_here`): the plan's Grad-CAM runs
    and each group's finished runs are read once a pass, not once a run (a group of n runs
    would read n² records). Make a new one for each pass: folders change between passes."""

    def __init__(self) -> None:
        self.runs: dict[str, tuple[PlanJob, str, str, float, int]] | None = None
        self.groups: dict[tuple[str, str, str], _Group] = {}


def _group(job: PlanJob, dataset: str, opt: str, results: Path, memo: Memo) -> _Group:
    key = (str(results), dataset, opt)
    if key in memo.groups:
        return memo.groups[key]
    params = job.config
    grid = [(float(a), int(s)) for a in params["alphas"] for s in params["seeds"]]
    folder = _in(results, runs_folder(dataset)) / opt
    whole = job_finished(job, results)
    # not started, or its job runs again and deletes runs.json first
    started = folder.is_dir() and not (folder / RUNS).exists() \
        and not removed_result(folder, RUNS)
    planned = {g: run_config(params, dataset, opt, g[0], g[1]) for g in grid}
    done = frozenset(g for g in grid if started and not whole
                     and finished_record(folder / run_name(*g), planned[g]) is not None
                     and (folder / run_name(*g) / FINAL).is_file())
    memo.groups[key] = _Group(folder, whole, started, planned, done)
    return memo.groups[key]


def gradcam_left(run: str, plan: Plan, results: Path, memo: Memo | None = None) -> Left | None:
    """What Grad-CAM run ``run`` still costs (None: in full): see the module's docstring.
    ``memo``: what this pricing pass has read already (a new one when not given)."""
    memo = memo if memo is not None else Memo()
    if memo.runs is None:  # one pass prices one plan
        memo.runs = gradcam_runs(plan)
    found = memo.runs.get(run)
    if found is None:
        return None
    job, dataset, opt, alpha, seed = found
    group = _group(job, dataset, opt, results, memo)
    n = len(group.planned)
    if group.whole:
        return Left(0.0, f"finished on this machine ({n} of {n} runs of the group finished "
                         "here): 0 now")
    if not group.started:
        return None
    done = group.done
    share = f"{len(done)} of {n} runs of the group finished here"
    if (float(alpha), int(seed)) in done:
        return Left(0.0, f"finished on this machine ({share}): 0 now")
    cfg = group.planned[(float(alpha), int(seed))]
    kept = epochs_kept(group.folder / run_name(float(alpha), int(seed)), cfg)
    if kept:
        epochs = int(cfg["epochs"])
        return Left(max(epochs - kept, 0) / epochs,
                    f"cut here at epoch {kept} of {epochs}: the epochs left ({share})")
    return Left(1.0, f"{share}, not this one") if done else None


def bridge_left(job: Any, plan: Plan, results: Path) -> Left | None:
    """What an optimizer of the SAM-at-the-edge-of-stability bridge still costs (None: in
    full): 0 when the plan job that trains it (``job.plan_job``, one sweep of every
    optimizer) finished here; when that sweep was cut (no ``sweep.json``) after its
    gradient flow, the share of this optimizer's steps left, a finished run counting whole
    and a cut one up to its checkpoint, as an eos setting's (:func:`eos_left`)."""
    rule, _, jid = str(job.plan_job).partition("/")
    found = plan.of_rule(rule).get(jid)
    if found is None:
        return None
    if job_finished(found, results):
        return Left(0.0, "finished on this machine: 0 now")
    folder = _in(results, found.outputs[0]).parent
    cap_steps = int(job.cap[0]) if job.cap is not None else 0
    if (folder / SWEEP).exists() or removed_result(folder, SWEEP) or cap_steps <= 0:
        return None  # a finished sweep that runs again starts over
    from sharpness.bridges.sam_eos import ENGINE_NAMES, SamEosParams  # lazy: torch

    params = SamEosParams.from_dict(dict(found.config))
    eta_c = finished_flow(folder, params.setting)
    if eta_c is None:
        return None
    name = str(job.run).rpartition("/")[2]
    (opt,) = (o for o in params.optimizers if o["name"] == name)
    kept = eos_steps_kept(params.setting, folder / name, eta_c,
                          {"optimizer": ENGINE_NAMES[name],
                           "opt_hparams": dict(opt.get("hparams", {}))})
    kept = min(kept, cap_steps)
    if kept <= 0:
        return None
    if kept == cap_steps:
        return Left(0.0, "every run finished on this machine before its job was cut: 0 now")
    return Left((cap_steps - kept) / cap_steps,
                f"cut here at step {kept} of {cap_steps}: the steps left")


def left_here(job: Any, plan: Plan, results: Path, memo: Memo | None = None) -> Left | None:
    """What priced job ``job`` (:class:`sharpness.cost.plan.Job`) of an eos setting, a
    Grad-CAM run or the SAM-at-the-edge-of-stability bridge still costs a campaign resumed on
    this machine; None: in full (or not a job of these). ``memo``: one :class:`Memo` for
    all the jobs of one pricing pass."""
    if job.paper == "eos" and job.run.startswith("setting/"):
        return eos_left(job.run.removeprefix("setting/"), plan, results, job)
    if job.paper == "minorfirst" and job.run.startswith("gradcam/"):
        return gradcam_left(job.run, plan, results, memo)
    if job.paper == "bridges" and job.plan_job:
        return bridge_left(job, plan, results)
    return None

