"""Spending a GPU budget in one go (``sharpness campaign``): packing jobs on the GPUs, one
Snakemake call across the plan, a watchdog that stops launching when the budget is spent, and
the budget that packing frees planned again.

**Packing.** Snakemake's default profile lets one GPU job run at a time (``gpu=1``). The
campaign writes its own workflow profile (:func:`write_profile`): a global ``gpu_mem_mb`` pool
(the GPUs' memory) and the global ``gpu`` count raised to ``jobs_per_gpu`` per GPU, so that
several small jobs share a GPU while their memory fits. Each job reserves the memory of its
own shape (:func:`job_memory`): the peak ``sharpness cost measure`` recorded for the run
shapes the job trains (:func:`runs_of`), with slack; a job whose shape was not measured gets
its rule's value (:func:`rule_memory`: the largest measured peak of its paper's shapes, or a
stated default), and the map says so. The map is a JSON file (:class:`MemoryMap`) that the
GPU rules' ``gpu_mem_mb`` resource reads (``job_gpu_mem`` in ``workflow/rules/common.smk``),
named by the config key ``plan.gpu_mem_file`` of a small overlay; without it every job asks 0.

**One call, watchdog.** The CPU-only claims are built first, before the GPU budget starts and
never charged to it; then every other target of the plan (its claims' figures and the ledger)
in **one** ``snakemake`` call (:func:`stages_of`), so Snakemake packs the jobs of all claims
together; the targets of the claims the plan settles at their power are given Snakemake's
``--prioritize``; beyond that the order is Snakemake's. Before each call the GPU-hours spent
so far (wall time x GPUs held) are compared with the budget: when it is spent, no call starts;
a call still running when it runs out is stopped (its runs resume from their checkpoints on
the next call). The record says what was bought. ``max_wall_s`` (``sharpness campaign
--max-wall``) is the allocation's wall time: no call, the CPU-only one included, runs past it
less a margin, and the record says the next call continues. A call stopped by a signal (a
scheduler's warning before its wall-time limit, as SLURM's ``--signal``; SIGTERM or Ctrl-C)
ends the campaign the same way: the record's ``continues`` is then true, and the next call
unlocks the working directory, reruns the incomplete jobs (training runs resume from their
checkpoints) and carries the GPU-hours spent.

**Re-planning what packing frees.** When the call completes having spent less than the plan's
price, the budget left is planned again (:func:`run_campaign`: ``sharpness plan`` for what is
left, the lesam, eos and Grad-CAM runs finished here priced at 0 and those cut mid-way at
the work left after their checkpoints: :mod:`sharpness.planning.resumed`), and the claims the new plan buys beyond those already
bought are run in a further call, at most ``max_replans`` times; a re-plan that would drop a
claim already bought is not run (the record says which and why).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sharpness.io import atomic_write_text

#: a rule header, and a resource line asking for GPUs, in a Snakemake rule file
RULE = re.compile(r"^\s*rule (\w+):")
#: ``use rule PARENT as CHILD with:`` (the child inherits the parent's resources)
USE_RULE = re.compile(r"^\s*use rule (\w+) as (\w+)")
#: ``gpu=`` on a line of its own or inside a one-line ``resources:`` block
GPU_RESOURCE = re.compile(r"^\s+(?:resources:.*[\s,])?gpu\s*=")
#: GPU memory a job is given when none of its paper's shapes was measured (MB)
DEFAULT_JOB_MB = 8000
#: measured peak memory x this + the CUDA context (MB): what a job is given
MEM_SLACK, CONTEXT_MB = 1.25, 600


def gpu_rules(rules_dir: str | Path) -> dict[str, str]:
    """Rule name -> paper (its rule file's stem) for every rule that declares ``gpu=``."""
    out: dict[str, str] = {}
    uses: list[tuple[str, str, str]] = []
    for path in sorted(Path(rules_dir).glob("*.smk")):
        rule = None
        for line in path.read_text().splitlines():
            if (m := RULE.match(line)) is not None:
                rule = m.group(1)
            elif (m := USE_RULE.match(line)) is not None:
                rule = m.group(2)
                uses.append((m.group(1), rule, path.stem))
            elif rule is not None and GPU_RESOURCE.match(line):
                out[rule] = path.stem
    for parent, child, stem in uses:
        if parent in out:
            out.setdefault(child, stem)
    return out


def rule_memory(rules: Mapping[str, str], measured: Iterable[Mapping[str, Any]],
                shapes_by_paper: Mapping[str, set[tuple[Any, ...]]],
                default_mb: int = DEFAULT_JOB_MB) -> dict[str, int]:
    """GPU memory (MB) each GPU rule's jobs are given: the largest measured peak of its
    paper's run shapes (``shapes_by_paper``: paper -> measurement keys) with slack, else
    ``default_mb``."""
    from sharpness.cost.measure import KEY_FIELDS

    peaks: dict[str, float] = {}
    for entry in measured:
        if entry.get("gpu_mem_mb") is None:
            continue
        key = tuple(entry[k] for k in KEY_FIELDS)
        for paper, shapes in shapes_by_paper.items():
            if key in shapes:
                peaks[paper] = max(peaks.get(paper, 0.0), float(entry["gpu_mem_mb"]))
    paper_of = {"lesam": "lesam", "eos": "eos", "gradcam": "minorfirst", "bridges": "bridges"}
    return {rule: int(peaks[paper_of.get(stem, stem)] * MEM_SLACK + CONTEXT_MB)
            if paper_of.get(stem, stem) in peaks else default_mb
            for rule, stem in rules.items()}


#: the jobs a build-plan rule trains, as run names of :func:`sharpness.cost.plan_jobs`: an
#: exact name (``{id}`` replaced by the job's id) or, ending in ``/``, every run under it
RULE_RUNS: dict[str, tuple[str, ...]] = {
    "lesam_train": ("{id}",),
    "lesam_glmc": ("glmc/{id}",),
    "lesam_signal": ("signal/{id}",),
    "eos_setting": ("setting/{id}",),
    "gradcam_train": ("gradcam/{id}/",),
    "bridges_sam_eos_run": ("sam_eos/",),
}


def runs_of(job: Any, runs: Iterable[str]) -> list[str]:
    """The priced runs (names among ``runs``) a build-plan ``job`` (:class:`sharpness.jobs.Job`)
    trains: its lesam run, GLMC run or signal probe; its eos setting (every ablation variant
    for the ablations' one job); its Grad-CAM data set's runs; the SAM bridge's runs; the
    timed runs of lesam's cost evaluation. None for a job that trains nothing the planner
    prices (lesam's other evaluations)."""
    runs = list(runs)
    if job.rule == "eos_ablations":
        patterns: tuple[str, ...] = tuple(f"setting/{name}" for name in job.config or {})
    elif job.rule == "lesam_eval":
        patterns = ("cost/",) if job.id == "cost" else ()
    else:
        patterns = tuple(p.format(id=job.id) for p in RULE_RUNS.get(job.rule, ()))
    return [r for r in runs for p in patterns
            if (r.startswith(p) if p.endswith("/") else r == p)]


def _on_cpu(job: Any, priced: list[Any]) -> bool:
    """Whether every run of ``job`` is pinned to the CPU (``device: cpu`` in its train config,
    or, for a full-batch job, in its setting): it holds no GPU, so reserves no GPU memory."""
    devices = [j.config.get("device") for j in priced if j.config]
    if not devices:  # full-batch runs: the device is the setting's
        cfg = job.config if isinstance(job.config, dict) else {}
        settings = (list(cfg.values()) if job.rule == "eos_ablations"
                    else [cfg.get("setting", {})] if job.rule == "bridges_sam_eos_run"
                    else [cfg])
        devices = [s.get("device") for s in settings if isinstance(s, dict)]
    return bool(devices) and all(d == "cpu" for d in devices)


@dataclass
class MemoryMap:
    """GPU memory (MB) each job of the build reserves (``jobs``: ``rule/id`` -> MB), each GPU
    rule's value for a job the map does not name (``rules``), and why a job has its rule's
    value rather than its own shape's (``fallback``: ``rule/id`` -> reason)."""

    jobs: dict[str, int]
    rules: dict[str, int]
    fallback: dict[str, str] = field(default_factory=dict)

    def mb(self, rule: str, id: str) -> int:
        """What job ``rule/id`` reserves (as the workflow's ``job_gpu_mem`` reads it)."""
        return int(self.jobs.get(f"{rule}/{id}", self.rules.get(rule, 0)))

    def write(self, path: str | Path) -> Path:
        """The map as JSON (the file ``plan.gpu_mem_file`` names)."""
        body = {"note": "written by `sharpness campaign` (sharpness.planning.campaign): the "
                        "GPU memory (MB) each job reserves in the gpu_mem_mb pool",
                "jobs": dict(sorted(self.jobs.items())), "rules": dict(sorted(self.rules.items())),
                "fallback": dict(sorted(self.fallback.items()))}
        atomic_write_text(Path(path), json.dumps(body, indent=1) + "\n")
        return Path(path)


def job_memory(plan: Iterable[Any], priced: Iterable[Any], measured: Iterable[Mapping[str, Any]],
               rules: Mapping[str, str], default_mb: int = DEFAULT_JOB_MB) -> MemoryMap:
    """The :class:`MemoryMap` of the GPU rules' jobs of ``plan`` (a :class:`sharpness.jobs.Plan`):
    each job the largest measured peak of the run shapes it trains (``priced``: the
    :func:`sharpness.cost.plan_jobs` of the same config; ``measured``: entries of
    ``measured.yaml``, the solo ones counting) x :data:`MEM_SLACK` + :data:`CONTEXT_MB`, times
    the GPUs a run trains on; 0 for a job pinned to the CPU; its rule's value
    (:func:`rule_memory`) when one of its shapes was not measured or it trains nothing
    priced, and the map says so."""
    from sharpness.cost.measure import KEY_FIELDS, job_key

    priced = list(priced)
    peaks: dict[tuple[Any, ...], float] = {}
    for entry in measured:
        if entry.get("gpu_mem_mb") is None or int(entry.get("packed", 1)) != 1:
            continue
        key = tuple(entry[k] for k in KEY_FIELDS)
        key = (key[0], key[1], float(key[2]), int(key[3]), *key[4:])
        peaks[key] = max(peaks.get(key, 0.0), float(entry["gpu_mem_mb"]))
    shapes: dict[str, set[tuple[Any, ...]]] = {}
    for j in priced:
        shapes.setdefault(j.paper, set()).add(job_key(j, "fp32"))
    by_rule = rule_memory(rules, [dict(zip(KEY_FIELDS, k, strict=True), gpu_mem_mb=v)
                                  for k, v in peaks.items()], shapes, default_mb)
    by_run = {j.run: j for j in priced}
    out = MemoryMap({}, dict(by_rule))
    for job in plan:
        if job.rule not in rules:
            continue
        mine = [by_run[r] for r in runs_of(job, by_run)]
        if mine and _on_cpu(job, mine):
            out.jobs[job.key] = 0
            continue
        keys = [job_key(j, "fp32") for j in mine]
        missing = [k for k in keys if k not in peaks]
        if not mine or missing:
            out.jobs[job.key] = by_rule[job.rule]
            out.fallback[job.key] = ("trains no run the planner prices" if not mine else
                                     "shape not measured: " + ", ".join(
                                         "/".join(str(x) for x in k[:5]) for k in missing[:3]))
            continue
        out.jobs[job.key] = max(int(peaks[job_key(j, "fp32")] * MEM_SLACK + CONTEXT_MB)
                                * max(j.gpus, 1) for j in mine)
    return out


def write_profile(folder: str | Path, *, cores: str, gpus: int, gpu_mem_mb: int,
                  jobs_per_gpu: int) -> Path:
    """The campaign's workflow profile (``<folder>/config.yaml``) with GPU packing: the
    ``gpu`` and ``gpu_mem_mb`` pools (each job's own ``gpu_mem_mb`` comes from the
    :class:`MemoryMap` the rules read, not from the profile: ``set-resources`` is per rule)."""
    folder = Path(folder)
    body = {
        "cores": cores,
        "resources": [f"gpu={max(gpus, 1) * jobs_per_gpu}", f"gpu_mem_mb={gpu_mem_mb}"],
        "default-resources": ["mem_mb=2000", "runtime=60", "gpu=0", "gpu_mem_mb=0"],
        "printshellcmds": True,
        "show-failed-logs": True,
    }
    head = ("# Written by `sharpness campaign` (sharpness.planning.campaign): several GPU jobs "
            "share a GPU while\n# their gpu_mem_mb (each job's measured peak + slack, read "
            "from plan.gpu_mem_file) fits the pool.\n")
    atomic_write_text(folder / "config.yaml", head + yaml.safe_dump(body, sort_keys=False))
    return folder


def write_memory_overlay(path: str | Path, memory_file: str | Path) -> Path:
    """The config overlay naming the memory map (``plan.gpu_mem_file``, an absolute path:
    a variant's build runs in its own folder), given after the plan's overlay."""
    text = yaml.safe_dump({"plan": {"gpu_mem_file": str(Path(memory_file).resolve())}})
    atomic_write_text(Path(path), "# Written by `sharpness campaign`: each job's GPU memory\n"
                      + text)
    return Path(path)


@dataclass
class Stage:
    """One ``snakemake`` call: its targets; ``charged``: False for the CPU-only claims, built
    before the GPU budget starts and never charged to it (they hold no GPU); ``claims``: what
    the call buys (the record's ``bought`` when it completes; its name when empty);
    ``prioritize``: targets given Snakemake's ``--prioritize``."""

    name: str
    targets: list[str]
    charged: bool = True
    claims: list[str] = field(default_factory=list)
    prioritize: list[str] = field(default_factory=list)


#: the stage of the CPU-only claims, and how long it may run (it holds no GPU: no budget)
CPU_STAGE, CPU_STAGE_LIMIT_S = "CPU-only claims (before the GPU budget, not charged)", 7 * 86400.0
#: the one call that builds every other target of the plan
PLAN_STAGE = "the plan's claims and the ledger (one call)"


@dataclass
class StageResult:
    """What one stage did."""

    name: str
    returncode: int
    wall_s: float
    stopped: bool = False  # stopped by the watchdog (budget or wall time) or by a signal
    signal: str | None = None  # the signal that stopped it (SIGTERM, ...), if one did


@dataclass
class Campaign:
    """The record of a campaign: budget, what was bought, what was spent, why it ended."""

    budget_gpu_hours: float
    gpus: int
    stages: list[StageResult] = field(default_factory=list)
    spent_gpu_hours: float = 0.0
    bought: list[str] = field(default_factory=list)
    not_started: list[str] = field(default_factory=list)
    ended: str = "completed"
    continues: bool = False  # cut at the allocation's end (wall time, signal): call again
    extra: dict[str, Any] = field(default_factory=dict)

    def write(self, path: str | Path) -> Path:
        """The record as JSON."""
        atomic_write_text(Path(path), json.dumps(asdict(self), indent=1, default=str) + "\n")
        return Path(path)


def stages_of(record: Mapping[str, Any]) -> list[Stage]:
    """The CPU-only claims first (uncharged: no GPU run), then one call for everything else
    the plan builds: every planned claim's figures, any target left and the ledger
    (``figures/CLAIMS.md``), its ``claims`` the planned claims with runs in the order the plan
    bought them and ``ledger``, the figures of the claims it settles at their power
    prioritized."""
    claims = record.get("claims", {})
    gpu = {cid: [f"figures/{i}.csv" for i in line.get("items", [])]
           for cid, line in claims.items() if line.get("planned") and line.get("runs")}
    seen = {t for targets in gpu.values() for t in targets}
    cpu = list(dict.fromkeys(t for cid, line in claims.items()
                             if line.get("planned") and not line.get("runs")
                             for t in (f"figures/{i}.csv" for i in line.get("items", []))
                             if t not in seen))
    targets = list(dict.fromkeys([*(t for ts in gpu.values() for t in ts),
                                  *(t for t in record.get("targets", []) if t not in cpu),
                                  "figures/CLAIMS.md"]))
    first = [Stage(CPU_STAGE, cpu, charged=False)] if cpu else []
    settled = list(dict.fromkeys(t for cid, ts in gpu.items()
                                 if claims[cid].get("settled") for t in ts))
    return [*first, Stage(PLAN_STAGE, targets, claims=[*gpu, "ledger"], prioritize=settled)]


def parse_duration(text: str, flag: str = "--max-wall") -> float:
    """Seconds of a duration as an allocation states it: ``90m``, ``3h``, ``1h30m``,
    ``3600s``, ``3600`` (seconds) or ``HH:MM:SS`` (SLURM's form); ``flag`` names the option
    in the error."""
    text = str(text).strip()
    if re.fullmatch(r"\d+(:\d{1,2}){1,2}", text):
        parts = [int(p) for p in text.split(":")]
        while len(parts) < 3:
            parts.insert(0, 0)
        return float(parts[0] * 3600 + parts[1] * 60 + parts[2])
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    found = re.findall(r"(\d+(?:\.\d+)?)([dhms])", text)
    if not found or "".join(n + u for n, u in found) != text:
        raise ValueError(f"{flag} {text!r}: a duration such as 90m, 3h, 1h30m or 02:00:00")
    scale = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return float(sum(float(n) * scale[u] for n, u in found))


#: the wall time kept free before an allocation's limit: a stopped stage's processes end and
#: the record is written (the larger of these seconds and this share of the limit)
WALL_MARGIN_S, WALL_MARGIN_SHARE = 300.0, 0.05


def wall_margin(max_wall_s: float) -> float:
    """The default margin kept before a wall-time limit of ``max_wall_s`` seconds."""
    return max(WALL_MARGIN_S, WALL_MARGIN_SHARE * max_wall_s)


def run_stages(stages: list[Stage], run: Callable[[Stage, float], StageResult], *,
               budget_gpu_hours: float, gpus: int, spent_before: float = 0.0,
               clock: Callable[[], float] = time.monotonic,
               max_wall_s: float | None = None, margin_s: float | None = None) -> Campaign:
    """Run the stages in turn while the budget lasts (see the module). ``run(stage, seconds)``
    runs one stage, stopping it after ``seconds``; a GPU-hour is an hour of the ``gpus`` held
    (at least one: tiny mode charges the CPU's hours); ``spent_before``: GPU-hours the
    campaign spent before (preflight and measurement, earlier allocations); ``max_wall_s``:
    the allocation's wall time left from now: no stage runs past it less ``margin_s``
    (default :func:`wall_margin`), and the campaign ends saying the next call continues."""
    held = max(gpus, 1)
    out = Campaign(budget_gpu_hours, gpus)
    start = clock() - spent_before * 3600 / held
    if max_wall_s is None:
        wall_end = None
    else:
        margin = wall_margin(max_wall_s) if margin_s is None else margin_s
        wall_end = clock() + max_wall_s - margin

    def cut(k: int, during: bool, result: StageResult | None = None) -> None:
        """End at the allocation's end: the wall limit, or a signal, before or during
        stage ``k``."""
        name = stages[k].name
        if result is not None and result.signal:
            out.ended = (f"stopped by {result.signal} during stage {name!r} (its runs resume "
                         "from their checkpoints): the next call continues")
        elif during:
            out.ended = (f"wall-time limit of the allocation reached during stage {name!r}: "
                         "stopped cleanly (its runs resume from their checkpoints): the next "
                         "call continues")
        else:
            out.ended = (f"wall-time limit of the allocation reached before stage {name!r}: "
                         "the next call continues")
        out.not_started = [s.name for s in stages[k + 1 if during else k:]]
        out.continues = True

    for k, stage in enumerate(stages):
        if wall_end is not None and clock() >= wall_end:
            cut(k, during=False)
            break
        left = None if wall_end is None else wall_end - clock()
        if not stage.charged:  # no GPU held: its wall time moves the start, not the budget
            t0 = clock()
            result = run(stage, CPU_STAGE_LIMIT_S if left is None
                         else min(CPU_STAGE_LIMIT_S, left))
            start += clock() - t0
            out.stages.append(result)
            if result.returncode == 0 and not result.stopped:
                out.bought += stage.claims or [stage.name]
                continue
            if result.stopped:  # only the wall limit or a signal stops it (no budget here)
                cut(k, during=True, result=result)
            else:
                out.ended = f"stage {stage.name!r} failed (snakemake exit {result.returncode})"
                out.not_started = [s.name for s in stages[k + 1:]]
            break
        spent = (clock() - start) * held / 3600
        if spent >= budget_gpu_hours:
            out.ended = f"budget spent ({spent:.3g} of {budget_gpu_hours:g} GPU-hours) " \
                        f"before stage {stage.name!r}: no further job launched"
            out.not_started = [s.name for s in stages[k:]]
            break
        allowed = (budget_gpu_hours - spent) * 3600 / held
        by_wall = left is not None and left < allowed
        if left is not None:
            allowed = min(allowed, left)
        result = run(stage, allowed)
        out.stages.append(result)
        if result.returncode == 0 and not result.stopped:
            out.bought += stage.claims or [stage.name]
        elif result.stopped and (by_wall or result.signal):
            cut(k, during=True, result=result)
            break
        elif result.stopped:
            out.ended = f"budget spent during stage {stage.name!r}: stopped (its runs resume " \
                        "from their checkpoints on the next call)"
            out.not_started = [s.name for s in stages[k + 1:]]
            break
        else:
            out.ended = f"stage {stage.name!r} failed (snakemake exit {result.returncode})"
            out.not_started = [s.name for s in stages[k + 1:]]
            break
    out.spent_gpu_hours = (clock() - start) * held / 3600
    return out


#: GPU-hours below which what is left of the budget is not planned again
MIN_REPLAN_GPU_HOURS = 0.05
#: re-plans of the budget that packing frees, at most, in one campaign call
MAX_REPLANS = 2


def _planned(record: Mapping[str, Any]) -> list[str]:
    """The claims a plan record buys that need GPU runs, in its order."""
    return [cid for cid, line in record.get("claims", {}).items()
            if line.get("planned") and line.get("runs")]


def run_campaign(record: Mapping[str, Any], run: Callable[[Stage, float], StageResult],
                 replan: Callable[[float], Mapping[str, Any]], *, budget_gpu_hours: float,
                 gpus: int, spent_before: float = 0.0,
                 clock: Callable[[], float] = time.monotonic,
                 max_wall_s: float | None = None, margin_s: float | None = None,
                 max_replans: int = MAX_REPLANS,
                 adopt: Callable[[Mapping[str, Any], bool], None] | None = None) -> Campaign:
    """The plan's stages (:func:`run_stages`), then, while the call completed having spent
    less than the plan priced and at least :data:`MIN_REPLAN_GPU_HOURS` of the budget is
    left, up to ``max_replans`` re-plans: ``replan(spent)`` plans the budget left after
    ``spent`` GPU-hours (runs finished here at 0, cut ones at the work left) and returns its record; the claims it buys
    beyond those bought already run in one more call. A re-plan that buys nothing new ends
    the loop; one that drops a claim already bought is not run (its runs are kept, the ledger
    of the plan before stays). ``adopt(new, run)`` is told after each re-plan whether it runs
    (the command then writes its memory map, or puts the plan before back). Each step is in
    ``extra["replans"]``; the time a re-plan takes holds the GPUs, so it is charged."""
    held = max(gpus, 1)
    wall_end = None if max_wall_s is None else clock() + max_wall_s
    margin = None if max_wall_s is None else (wall_margin(max_wall_s) if margin_s is None
                                             else margin_s)
    call_start = spent_before
    out = run_stages(stages_of(record), run, budget_gpu_hours=budget_gpu_hours, gpus=gpus,
                     spent_before=spent_before, clock=clock, max_wall_s=max_wall_s,
                     margin_s=margin_s)
    steps: list[dict[str, Any]] = []
    out.extra["replans"] = steps
    for _ in range(max(max_replans, 0)):
        price = float(record.get("gpu_hours", 0.0))
        used = out.spent_gpu_hours - call_start
        left = budget_gpu_hours - out.spent_gpu_hours
        step: dict[str, Any] = {"plan": record.get("id"), "priced_gpu_hours": price,
                                "spent_gpu_hours": round(used, 6),
                                "left_gpu_hours": round(left, 6)}
        steps.append(step)
        if out.ended != "completed":
            step["outcome"] = "not re-planned: the call did not complete"
            break
        if used >= price or left < MIN_REPLAN_GPU_HOURS:
            step["outcome"] = ("not re-planned: packing freed nothing (spent "
                               f"{used:.3g} of the {price:.3g} GPU-hours priced)"
                               if used >= price else
                               f"not re-planned: {left:.3g} GPU-hours left")
            break
        t0 = clock()
        new = replan(out.spent_gpu_hours)
        out.spent_gpu_hours += (clock() - t0) * held / 3600
        step["replan"] = new.get("id")
        bought = set(out.bought)
        dropped = [c for c in _planned(record) if c in bought and c not in _planned(new)]
        fresh = [c for c in _planned(new) if c not in bought]
        step["new_claims"] = fresh
        if adopt is not None:
            adopt(new, bool(fresh) and not dropped)
        if dropped:
            step["outcome"] = ("not run: the re-plan drops claims already bought ("
                               + ", ".join(dropped) + "; it prices their lesam, eos and "
                               "Grad-CAM runs finished here at 0 and those cut here at the "
                               "work left after their checkpoints, any other run in full)")
            break
        if not fresh:
            step["outcome"] = "the re-plan buys nothing new"
            break
        step["outcome"] = f"runs {len(fresh)} more claim(s): {', '.join(fresh)}"
        call_start = out.spent_gpu_hours
        wall = None if wall_end is None else wall_end - clock()
        more = run_stages(stages_of(new), run, budget_gpu_hours=budget_gpu_hours, gpus=gpus,
                          spent_before=out.spent_gpu_hours, clock=clock, max_wall_s=wall,
                          margin_s=margin)
        out.stages += more.stages
        out.bought += [c for c in more.bought if c not in bought]
        out.spent_gpu_hours = more.spent_gpu_hours
        out.ended, out.continues, out.not_started = more.ended, more.continues, more.not_started
        record = new
    return out
