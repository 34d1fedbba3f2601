"""``sharpness campaign --gpu-hours N``: one command for a GPU budget.

In order, each step stopping the campaign loudly when it fails: the preflight
(:mod:`sharpness.planning.preflight`: a GPU visible, driver and torch agreeing, a real training
step on it, the data present or fetchable, disk for the checkpoints), ``sharpness cost
measure`` of every run shape the plan may buy (step times and peak memory on this GPU), the
plan (``sharpness plan`` priced from those step times), and Snakemake over the plan in one
call, each job reserving its own shape's measured GPU memory so that small runs share a GPU,
with a watchdog that stops launching when the budget is spent, and the budget packing freed
planned again (:mod:`sharpness.planning.campaign`). It writes ``<out-dir>/campaign.json``: what was bought,
what was spent, why it ended. ``--tiny`` runs the same path on the CPU with the quick profile
(a check of the path, not a price). ``make gpu-campaign GPU_HOURS=N`` calls it.

Across allocations: ``--max-wall`` stops the campaign cleanly before the allocation's end, and
SIGTERM, SIGINT or SIGUSR1 (a scheduler's warning, e.g. SLURM's ``--signal=B:USR1@600``, or
Ctrl-C) stops the running stage the same way (its Snakemake process group is terminated, so
no job outlives the campaign). The next call with the same budget lifts the lock, reruns the
incomplete jobs, prices the finished runs at 0 and charges the GPU-hours already spent.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sharpness.commands import add_command
from sharpness.errors import ConfigError

if TYPE_CHECKING:
    from sharpness.planning.campaign import Stage, StageResult

PAPER = "workflow/config/paper.yaml"
QUICK = "workflow/config/quick.yaml"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``campaign`` subcommand."""
    p = add_command(
        subparsers, "campaign", "check the GPU, measure, plan and run a GPU budget",
        description="Spend --gpu-hours on one machine: preflight (GPU, driver, a real step, "
        "data, disk), step times measured on the GPU, the plan, and Snakemake with GPU "
        "packing and a watchdog that stops launching when the budget is spent.", func=run)
    p.add_argument("--gpu-hours", type=float, required=True, metavar="N", help="the budget")
    p.add_argument("--configfile", action="append", default=[], metavar="FILE",
                   help=f"the profile (default {PAPER}; with --tiny {QUICK})")
    p.add_argument("--tiny", action="store_true",
                   help="the whole path on the CPU with the quick profile: a check, not a price")
    p.add_argument("--claims", default=None, metavar="ID,...", help="only these claims")
    p.add_argument("--cores", default="all", help="snakemake --cores (default all)")
    p.add_argument("--out-dir", default="plans/campaign",
                   help="where the plan, step times, profile and record go (plans/campaign)")
    p.add_argument("--results", default="results", help="the workflow's results folder")
    p.add_argument("--min-free-gb", type=float, default=20.0,
                   help="free disk the checkpoints need (default 20 GiB; tiny: 0.1)")
    p.add_argument("--jobs-per-gpu", type=int, default=8,
                   help="at most this many jobs share one GPU (memory permitting; default 8)")
    p.add_argument("--gpu-mem-mb", type=int, default=None,
                   help="the GPU memory pool (default: 90%% of the GPUs' memory; tiny: 16000)")
    p.add_argument("--max-wall", default=None, metavar="DURATION",
                   help="the allocation's wall time (90m, 3h, 02:00:00): stop cleanly before "
                        "it; the next call continues (unlock, rerun-incomplete, the GPU-hours "
                        "spent so far carried over from plans/campaign/campaign.json)")
    p.add_argument("--wall-margin", default=None, metavar="DURATION",
                   help="wall time kept free before --max-wall for the last stage to stop "
                        "(default: the larger of 5 minutes and 5%% of --max-wall)")
    p.add_argument("--measure-limit", type=int, default=None,
                   help="time at most this many run shapes (default all; tiny: 1)")
    p.add_argument("--max-replans", type=int, default=None, metavar="N",
                   help="plan the budget packing freed again at most N times (default "
                        "sharpness.planning.campaign.MAX_REPLANS; 0: never)")


def _configfiles(args: argparse.Namespace) -> list[str]:
    return args.configfile or [QUICK if args.tiny else PAPER]


def _pool_mb(args: argparse.Namespace, gpus: int) -> int:
    if args.gpu_mem_mb is not None:
        return args.gpu_mem_mb
    if gpus == 0:
        return 16000
    import torch  # lazy: torch

    total = sum(torch.cuda.get_device_properties(i).total_memory for i in range(gpus))
    return int(0.9 * total / 2**20)


#: the signals that stop a campaign cleanly (a scheduler's warning before its limit, Ctrl-C)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)
#: seconds a stopped stage's Snakemake is given to end its jobs before it is killed
TERM_GRACE_S = 120.0


class StopRequest:
    """The stop signal received (if any) and the running stage's process group."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self.group: int | None = None

    def handle(self, signum: int, _frame: object) -> None:
        """Record the signal and terminate the running stage (the loop then reports it)."""
        self.signal = signal.Signals(signum).name
        if self.group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.group, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals(stop: StopRequest) -> Iterator[StopRequest]:
    """Route :data:`STOP_SIGNALS` to ``stop`` while the stages run (restored after)."""
    before = {s: signal.signal(s, stop.handle) for s in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def snakemake_stage(configfiles: list[str], overlays: list[Path], profile: Path, cores: str,
                    stop: StopRequest | None = None) -> Callable[[Stage, float], StageResult]:
    """A stage runner for :func:`sharpness.planning.campaign.run_stages`: one snakemake call
    (the profile's ``configfiles``, then ``overlays``: the plan's, the memory map's; the
    stage's ``prioritize`` targets given ``--prioritize``) in its own process group, terminated (then, after :data:`TERM_GRACE_S`, killed) when its
    time is up or ``stop`` records a signal (the result then names it)."""
    from sharpness.planning.campaign import StageResult
    from sharpness.readme.sources import snakemake_executable

    stop = stop or StopRequest()

    def run_stage(stage: Stage, seconds: float) -> StageResult:
        if stop.signal is not None:  # the signal came between two stages
            return StageResult(stage.name, 0, 0.0, True, stop.signal)
        # --rerun-incomplete: a job killed at an allocation's end or at the budget is
        # rerun (its run resumes from its checkpoint), not refused as incomplete
        first = ["--prioritize", *stage.prioritize] if stage.prioritize else []
        cmd = [snakemake_executable(), "--cores", cores, "--workflow-profile", str(profile),
               "--rerun-incomplete", *first, "--configfile", *configfiles,
               *map(str, overlays), "--", *stage.targets]
        print(f"campaign: stage {stage.name!r}: {' '.join(cmd)}", flush=True)
        t0 = time.monotonic()
        deadline, terminated = t0 + max(seconds, 1.0), None
        proc = subprocess.Popen(cmd, start_new_session=True)
        stop.group = proc.pid
        try:
            while True:
                try:
                    rc = proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if terminated is None and (now >= deadline or stop.signal is not None):
                        os.killpg(proc.pid, signal.SIGTERM)
                        terminated = now
                    elif terminated is not None and now - terminated > TERM_GRACE_S:
                        os.killpg(proc.pid, signal.SIGKILL)
        finally:
            stop.group = None
        stopped = terminated is not None or stop.signal is not None
        return StageResult(stage.name, rc, time.monotonic() - t0, stopped, stop.signal)
    return run_stage


def unlock(configfiles: list[str], overlay: Path) -> None:
    """``snakemake --unlock``: a campaign killed at an allocation's end leaves the working
    directory locked; the next call lifts the lock before its first stage (a no-op when
    there is none)."""
    from sharpness.readme.sources import snakemake_executable

    subprocess.run([snakemake_executable(), "--unlock", "--configfile", *configfiles,
                    str(overlay)], check=False, capture_output=True, timeout=600)


def spent_before(record: Path, budget: float) -> float:
    """GPU-hours an earlier call of the same campaign spent (its ``campaign.json``, when it
    was cut at an allocation's end, by its wall-time limit or a signal, and was given the same
    budget), else 0."""
    import json

    try:
        prev = json.loads(record.read_text())
    except (OSError, ValueError):
        return 0.0
    cut = prev.get("continues") or "wall-time limit" in str(prev.get("ended", ""))
    if not cut or float(prev.get("budget_gpu_hours", -1)) != float(budget):
        return 0.0
    return float(prev.get("spent_gpu_hours", 0.0))


def reusable_entries(path: Path, device: str) -> tuple[list[dict], dict[tuple, dict]]:
    """The entries of ``path`` (a ``measured.yaml``; none when absent) a campaign keeps, and
    among them the solo fp32 step times of the configured recipe that ``device`` measured
    with this checkout's training code, by shape (:func:`sharpness.cost.measure.job_key`):
    those shapes are not measured again. Entries of other devices stay (they price nothing
    here); stale entries of this device (other training code) are dropped, to be measured
    again."""
    from sharpness.cost.measure import KEY_FIELDS
    from sharpness.cost.price import measured_throughputs, unusable

    if not path.is_file():
        return [], {}
    kept, reused = [], {}
    for entry in measured_throughputs(str(path)):
        here = (entry.get("device") or entry.get("gpu")) == device
        if here and unusable(entry, device) is not None:
            continue
        kept.append(dict(entry))
        if here and entry.get("recipe", "configured") == "configured" and \
                int(entry.get("packed", 1)) == 1 and entry["precision"] == "fp32":
            key = tuple(entry.get(k) for k in KEY_FIELDS)
            reused[(key[0], key[1], float(key[2]), int(key[3]), *key[4:])] = dict(entry)
    return kept, reused


def _plan(args: argparse.Namespace, files: list[str], out: Path, measured: Path | None,
          earlier: float = 0.0) -> tuple[dict, list]:
    """``sharpness plan`` over the profile (priced from ``measured`` where it has the shape),
    its record, and the jobs it builds (those of its targets, in the profile with its
    overlay)."""
    import json

    from sharpness.commands import plan as plan_command
    from sharpness.config.profiles import load_profile
    from sharpness.cost import plan_jobs
    from sharpness.planning.offline import in_targets

    # resumed in a later allocation: the budget left, and the runs finished here free
    argv = ["plan", "--gpu-hours", str(max(args.gpu_hours - earlier, 0.0)), "--base", "none",
            "--out", str(out / "plan.yaml"), "--method", "analytic", "--results", args.results]
    argv += ["--finished-free"] if earlier > 0 else []
    argv += ["--measured", str(measured)] if measured is not None else []
    for f in files:
        argv += ["--configfile", f]
    argv += ["--claims", args.claims] if args.claims else []
    parser = argparse.ArgumentParser(prog="sharpness")
    plan_command.register(parser.add_subparsers())
    plan_args = parser.parse_args(argv)
    if int(plan_args.func(plan_args) or 0) != 0:
        raise ConfigError("sharpness campaign: the plan failed")
    record = json.loads((out / "plan.json").read_text())
    jobs = in_targets(plan_jobs(load_profile([*files, str(out / "plan.yaml")], None)),
                      set(record["targets"]))
    return record, jobs


def run(args: argparse.Namespace) -> int:
    """Preflight, measure, plan, run, record."""
    from sharpness.config.profiles import load_profile
    from sharpness.cost import MEASURED, plan_jobs
    from sharpness.cost import measure as meas
    from sharpness.cost.measure import job_key
    from sharpness.jobs import build_plan
    from sharpness.mappings import offset_seeds
    from sharpness.planning import campaign as camp
    from sharpness.planning.offline import weights_of
    from sharpness.planning.preflight import check_data, device_check, preflight

    if not args.gpu_hours > 0:
        raise ConfigError(f"--gpu-hours {args.gpu_hours}: must be > 0")
    try:  # a malformed --max-wall fails before the preflight, not at the first stage
        max_wall = None if args.max_wall is None else camp.parse_duration(args.max_wall)
        margin = None if args.wall_margin is None else \
            camp.parse_duration(args.wall_margin, flag="--wall-margin")
    except ValueError as err:
        raise ConfigError(str(err)) from err
    started = time.monotonic()
    report, gpus = device_check(args.tiny)  # first: nothing else is worth doing without it
    files = _configfiles(args)
    config = load_profile(files, None)
    args.results = results_folder(files, config, args.results)
    preflight(report, config=config, results=args.results,
              min_free_gb=0.1 if args.tiny else args.min_free_gb)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    earlier = spent_before(out / "campaign.json", args.gpu_hours)  # an earlier allocation's
    # a first plan (analytic prices) names the runs: their data, then their step times
    _, jobs = _plan(args, files, out, None, earlier)
    check_data(report, {j.dataset for j in jobs}, config, weights_of(jobs))
    limit = args.measure_limit if args.measure_limit is not None else (1 if args.tiny else None)
    device = "cpu" if args.tiny else "cuda"
    unique = list({job_key(j, "fp32"): j for j in jobs}.values())[:limit]
    measured = out / "measured.yaml" if args.tiny else \
        Path(__file__).resolve().parents[1] / "cost" / MEASURED
    # step times this device measured with this training code are reused (a resumed
    # campaign measures only the shapes it has not timed yet); the rest are measured now
    kept, reused = reusable_entries(measured, meas.device_name(device))
    todo = [j for j in unique if job_key(j, "fp32") not in reused]
    print(f"measure: {len(unique) - len(todo)} of {len(unique)} shapes reused from {measured} "
          f"({meas.device_name(device)}, the same training code)", flush=True)
    new = meas.measure(todo, device=device, precisions=("fp32",),
                       warmup=1 if args.tiny else 3, steps=2 if args.tiny else 10,
                       data_root=str((config.get("data") or {}).get("root") or "data"),
                       log=lambda t: print(f"measure: {t}", flush=True)) if todo else []
    entries = [*reused.values(), *new]
    meas.write([*kept, *new], measured, note=f"written by `sharpness campaign` ({device})")
    # the plan priced from those step times (its data checked again: it may buy others)
    record, jobs = _plan(args, files, out, measured, earlier)
    check_data(report, {j.dataset for j in jobs}, config, weights_of(jobs))
    _refuse_wide(jobs, gpus, args.tiny)
    # Snakemake with GPU packing: each job its own shape's memory, the plan in one call
    rules = camp.gpu_rules(Path("workflow/rules"))
    files_after = [out / "plan.yaml", out / "gpu_mem.yaml"]

    def memory_map() -> None:
        """The memory each job of the plan now in ``plan.yaml`` reserves (its map, and the
        overlay that names it)."""
        full = load_profile([*files, str(out / "plan.yaml")], None)
        offset_seeds(full)  # the job ids the workflow will use (the Snakefile moves them so)
        mem = camp.job_memory(build_plan(full), plan_jobs(full), entries, rules)
        camp.write_memory_overlay(out / "gpu_mem.yaml", mem.write(out / "gpu_mem.json"))
        own = len(mem.jobs) - len(mem.fallback)
        print(f"campaign: GPU memory per job: {own} of {len(mem.jobs)} jobs from their own "
              f"measured shape, {len(mem.fallback)} at their rule's value (not measured); "
              f"{out / 'gpu_mem.json'}", flush=True)

    def replan(spent: float) -> dict:
        """The budget left after ``spent`` GPU-hours planned again (runs finished here at
        0), the plan before kept aside until :func:`adopt` says whether this one runs."""
        print(f"campaign: re-plan with {args.gpu_hours - spent:.3g} GPU-hours left",
              flush=True)
        for name in ("plan.yaml", "plan.json"):
            shutil.copyfile(out / name, out / f"before.{name}")
        new, new_jobs = _plan(args, files, out, measured, spent)
        check_data(report, {j.dataset for j in new_jobs}, config, weights_of(new_jobs))
        _refuse_wide(new_jobs, gpus, args.tiny)
        return new

    def adopt(_new: object, runs: bool) -> None:
        """A re-plan that runs gets its memory map; one that does not, the plan before back
        (the ledger built names it)."""
        for name in ("plan.yaml", "plan.json"):
            if runs:
                (out / f"before.{name}").unlink()
            else:
                os.replace(out / f"before.{name}", out / name)
        if runs:
            memory_map()

    memory_map()
    profile = camp.write_profile(out / "profile", cores=args.cores, gpus=gpus,
                                 gpu_mem_mb=_pool_mb(args, gpus),
                                 jobs_per_gpu=args.jobs_per_gpu)
    unlock(files, out / "plan.yaml")
    before = (time.monotonic() - started) * max(gpus, 1) / 3600  # preflight, measure, plan
    wall = None if max_wall is None else max_wall - (time.monotonic() - started)
    if margin is None and max_wall is not None:
        margin = camp.wall_margin(max_wall)
    with stop_on_signals(StopRequest()) as stop:
        runner = snakemake_stage(files, files_after, profile, args.cores, stop)
        result = camp.run_campaign(
            record, runner, replan, budget_gpu_hours=args.gpu_hours, gpus=gpus,
            spent_before=before + earlier, max_wall_s=wall, margin_s=margin,
            max_replans=camp.MAX_REPLANS if args.max_replans is None else args.max_replans,
            adopt=adopt)
    result.extra.update({"plan": record["id"], "measured": str(measured),
                         "preflight": report.lines, "tiny": args.tiny})
    for step in result.extra["replans"]:
        print(f"campaign: after plan {step['plan']} (priced {step['priced_gpu_hours']:.3g}, "
              f"spent {step['spent_gpu_hours']:.3g} GPU-hours): {step['outcome']}", flush=True)
    path = result.write(out / "campaign.json")
    print(f"campaign: {result.ended}; bought {len(result.bought)} claim(s) or stage(s) "
          f"({', '.join(result.bought) or 'none'}), spent {result.spent_gpu_hours:.3g} of "
          f"{args.gpu_hours:g} GPU-hours; record {path}")
    if stop.signal is not None and result.continues:  # stopped by a signal: its exit status
        return 128 + int(signal.Signals[stop.signal])
    return 0 if result.ended == "completed" or "budget spent" in result.ended \
        or result.continues else 1


def _refuse_wide(jobs: list, gpus: int, tiny: bool) -> None:
    """Stop when a plan buys runs that train on more GPUs than are visible (not in tiny
    mode, which runs on the CPU)."""
    wide = sorted({j.run for j in jobs if j.gpus > max(gpus, 1)})
    if wide and not tiny:
        raise ConfigError(f"sharpness campaign: the plan buys runs that train on more GPUs than "
                          f"the {gpus} visible ({', '.join(wide[:5])}): give --claims without "
                          "them, or run on a machine with that many GPUs")


def results_folder(files: list[str], config: dict, results: str) -> str:
    """Where the campaign's runs land: ``results``, or, when ``files`` change the profile's
    settings (a variant, :mod:`sharpness.config.variant`), the variant's ``results/``, which
    is where Snakemake builds them (the finished runs a resumed campaign prices at 0 are
    looked for there)."""
    from sharpness.config.profiles import DEFAULT_PROFILE, read_config_file
    from sharpness.config.variant import variant_of_files

    variant = variant_of_files(files, [read_config_file(f) for f in files], config,
                               read_config_file(DEFAULT_PROFILE))
    if variant is None or results != "results":
        return results
    print(f"campaign: {variant.summary()}; it builds in {variant.folder}/", flush=True)
    return f"{variant.folder}/results"

