"""``sharpness campaign --gpu-hours N``: one command for a GPU budget.

In order, each step stopping the campaign loudly when it fails: the preflight
(:mod:`sharpness.planning.preflight`: a GPU visible, driver and torch agreeing, a real training
step on it, the data present or fetchable, disk for the checkpoints), ``sharpness cost
measure`` of every run shape the plan may buy (step times and peak memory on this GPU), the
plan (``sharpness plan`` priced from those step times), and Snakemake over the plan with GPU
packing and a watchdog that stops launching when the budget is spent
(:mod:`sharpness.planning.campaign`). It writes ``<out-dir>/campaign.json``: what was bought,
what was spent, why it ended. ``--tiny`` runs the same path on the CPU with the quick profile
(a check of the path, not a price). ``make gpu-campaign GPU_HOURS=N`` calls it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from collections.abc import Callable
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
    p.add_argument("--measure-limit", type=int, default=None,
                   help="time at most this many run shapes (default all; tiny: 1)")


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


def snakemake_stage(configfiles: list[str], overlay: Path, profile: Path, cores: str
                    ) -> Callable[[Stage, float], StageResult]:
    """A stage runner for :func:`sharpness.planning.campaign.run_stages`: one snakemake call
    in its own process group, terminated (then killed) when its time is up."""
    from sharpness.planning.campaign import StageResult
    from sharpness.readme.sources import snakemake_executable

    def run_stage(stage: Stage, seconds: float) -> StageResult:
        # --rerun-incomplete: a job killed at an allocation's end or at the budget is
        # rerun (its run resumes from its checkpoint), not refused as incomplete
        cmd = [snakemake_executable(), "--cores", cores, "--workflow-profile", str(profile),
               "--rerun-incomplete", "--configfile", *configfiles, str(overlay), "--",
               *stage.targets]
        print(f"campaign: stage {stage.name!r}: {' '.join(cmd)}", flush=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, start_new_session=True)
        try:
            rc = proc.wait(timeout=max(seconds, 1.0))
            return StageResult(stage.name, rc, time.monotonic() - t0)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return StageResult(stage.name, proc.returncode, time.monotonic() - t0, True)
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
    ended at an allocation's wall-time limit and was given the same budget), else 0."""
    import json

    try:
        prev = json.loads(record.read_text())
    except (OSError, ValueError):
        return 0.0
    if "wall-time limit" not in str(prev.get("ended", "")) or \
            float(prev.get("budget_gpu_hours", -1)) != float(budget):
        return 0.0
    return float(prev.get("spent_gpu_hours", 0.0))


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
    from sharpness.cost import MEASURED
    from sharpness.cost import measure as meas
    from sharpness.cost.measure import job_key
    from sharpness.planning import campaign as camp
    from sharpness.planning.offline import weights_of
    from sharpness.planning.preflight import check_data, device_check, preflight

    if not args.gpu_hours > 0:
        raise ConfigError(f"--gpu-hours {args.gpu_hours}: must be > 0")
    try:  # a malformed --max-wall fails before the preflight, not at the first stage
        _ = None if args.max_wall is None else camp.parse_duration(args.max_wall)
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
    entries = meas.measure(unique, device=device, precisions=("fp32",),
                           warmup=1 if args.tiny else 3, steps=2 if args.tiny else 10,
                           data_root=str((config.get("data") or {}).get("root") or "data"),
                           log=lambda t: print(f"measure: {t}", flush=True))
    measured = out / "measured.yaml" if args.tiny else \
        Path(__file__).resolve().parents[1] / "cost" / MEASURED
    meas.write(entries, measured, note=f"written by `sharpness campaign` ({device})")
    # the plan priced from those step times (its data checked again: it may buy others)
    record, jobs = _plan(args, files, out, measured, earlier)
    check_data(report, {j.dataset for j in jobs}, config, weights_of(jobs))
    wide = sorted({j.run for j in jobs if j.gpus > max(gpus, 1)})
    if wide and not args.tiny:
        raise ConfigError(f"sharpness campaign: the plan buys runs that train on more GPUs than "
                          f"the {gpus} visible ({', '.join(wide[:5])}): give --claims without "
                          "them, or run on a machine with that many GPUs")
    # Snakemake with GPU packing, stage by stage while the budget lasts
    shapes: dict[str, set] = {}
    for j in jobs:
        shapes.setdefault(j.paper, set()).add(job_key(j, "fp32"))
    rules = camp.gpu_rules(Path("workflow/rules"))
    profile = camp.write_profile(out / "profile", cores=args.cores, gpus=gpus,
                                 gpu_mem_mb=_pool_mb(args, gpus),
                                 per_rule_mb=camp.rule_memory(rules, entries, shapes),
                                 jobs_per_gpu=args.jobs_per_gpu)
    runner = snakemake_stage(files, out / "plan.yaml", profile, args.cores)
    unlock(files, out / "plan.yaml")
    before = (time.monotonic() - started) * max(gpus, 1) / 3600  # preflight, measure, plan
    wall = None if args.max_wall is None else \
        camp.parse_duration(args.max_wall) - (time.monotonic() - started)
    result = camp.run_stages(camp.stages_of(record), runner, budget_gpu_hours=args.gpu_hours,
                             gpus=gpus, spent_before=before + earlier, max_wall_s=wall)
    result.extra = {"plan": record["id"], "measured": str(measured),
                    "preflight": report.lines, "tiny": args.tiny}
    path = result.write(out / "campaign.json")
    print(f"campaign: {result.ended}; bought {len(result.bought)} stage(s) "
          f"({', '.join(result.bought) or 'none'}), spent {result.spent_gpu_hours:.3g} of "
          f"{args.gpu_hours:g} GPU-hours; record {path}")
    return 0 if result.ended == "completed" or "budget spent" in result.ended \
        or "wall-time limit" in result.ended else 1


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

