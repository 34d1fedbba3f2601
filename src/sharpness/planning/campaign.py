"""Spending a GPU budget in one go (``sharpness campaign``): packing jobs on the GPUs and a
watchdog that stops launching when the budget is spent.

**Packing.** Snakemake's default profile lets one GPU job run at a time (``gpu=1``). The
campaign writes its own workflow profile (:func:`write_profile`): a global ``gpu_mem_mb`` pool
(the GPUs' memory), each GPU rule's ``gpu_mem_mb`` set through ``set-resources`` from the peak
memory ``sharpness cost measure`` recorded for its paper's run shapes (a stated default where
none was measured), and the global ``gpu`` count raised to ``jobs_per_gpu`` per GPU, so that
several small jobs share a GPU while their memory fits. The GPU rules are found in the rule
files (every rule that declares a ``gpu=`` resource); nothing in them changes.

**Watchdog.** The CPU-only claims are built first, before the GPU budget starts and never
charged to it; then the plan's claims in stages, in the order the plan bought them (the
cheapest information first), one ``snakemake`` call each (:func:`run_stages`). Before each
stage the GPU-hours spent so far (wall time x GPUs held) are compared with the budget: when
it is spent, no further stage starts; a stage still running when it runs out is stopped (its
runs resume from their checkpoints on the next call). The record says what was bought.
``max_wall_s`` (``sharpness campaign --max-wall``) is the allocation's wall time: no stage,
the CPU-only one included, runs past it less a margin, and the record says the next call
continues. A stage stopped by a signal (a scheduler's warning before its wall-time limit, as
SLURM's ``--signal``; SIGTERM or Ctrl-C) ends the campaign the same way: the record's
``continues`` is then true, and the next call unlocks the working directory, reruns the
incomplete jobs (training runs resume from their checkpoints) and carries the GPU-hours spent.
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


def write_profile(folder: str | Path, *, cores: str, gpus: int, gpu_mem_mb: int,
                  per_rule_mb: Mapping[str, int], jobs_per_gpu: int) -> Path:
    """The campaign's workflow profile (``<folder>/config.yaml``) with GPU packing."""
    folder = Path(folder)
    body = {
        "cores": cores,
        "resources": [f"gpu={max(gpus, 1) * jobs_per_gpu}", f"gpu_mem_mb={gpu_mem_mb}"],
        "default-resources": ["mem_mb=2000", "runtime=60", "gpu=0", "gpu_mem_mb=0"],
        "set-resources": [f"{rule}:gpu_mem_mb={mb}" for rule, mb in sorted(per_rule_mb.items())],
        "printshellcmds": True,
        "show-failed-logs": True,
    }
    head = ("# Written by `sharpness campaign` (sharpness.planning.campaign): several GPU jobs "
            "share a GPU while\n# their gpu_mem_mb (measured peak + slack) fits the pool.\n")
    atomic_write_text(folder / "config.yaml", head + yaml.safe_dump(body, sort_keys=False))
    return folder


@dataclass
class Stage:
    """One ``snakemake`` call: the targets of one planned claim (or the ledger);
    ``charged``: False for the CPU-only claims, built before the GPU budget starts and never
    charged to it (they hold no GPU)."""

    name: str
    targets: list[str]
    charged: bool = True


#: the stage of the CPU-only claims, and how long it may run (it holds no GPU: no budget)
CPU_STAGE, CPU_STAGE_LIMIT_S = "CPU-only claims (before the GPU budget, not charged)", 7 * 86400.0


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
    """The CPU-only claims first (uncharged: no GPU run), then the plan's planned claims with
    runs, in the order it bought them, then one stage for the ledger (``figures/CLAIMS.md``)
    and any target left."""
    out, seen = [], set()
    claims = record.get("claims", {})
    for cid, line in claims.items():
        if not line.get("planned") or not line.get("runs"):
            continue
        targets = [t for t in (f"figures/{i}.csv" for i in line.get("items", []))
                   if t not in seen]
        seen.update(targets)
        if targets:
            out.append(Stage(cid, targets))
    cpu = [t for t in (f"figures/{i}.csv" for cid, line in claims.items()
                       if line.get("planned") and not line.get("runs")
                       for i in line.get("items", []))
           if t not in seen]
    cpu = list(dict.fromkeys(cpu))
    seen.update(cpu)
    rest = [t for t in record.get("targets", []) if t not in seen]
    first = [Stage(CPU_STAGE, cpu, charged=False)] if cpu else []
    return [*first, *out, Stage("ledger", rest or ["figures/CLAIMS.md"])]


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
                out.bought.append(stage.name)
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
            out.bought.append(stage.name)
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
