"""``sharpness cost --configfile workflow/config/paper.yaml``: what a profile will cost.

Prints a Markdown table of runs, optimizer steps and GPU-hours per item and in total (see
:mod:`sharpness.cost`). The config is read as the workflow reads it: the Snakefile's default
``workflow/config/quick.yaml`` with each ``--configfile`` merged over it, a whole profile
(``profile`` and ``data`` keys, e.g. ``paper.yaml``) replacing what came before
(``--base none`` to price files on their own). With a CUDA device the step times are measured on it; without one
the table is an analytic estimate at ``--tflops`` sustained TFLOP/s, and says so. Both
precisions are priced, one column each: fp32 (as the official codes train) and bf16 autocast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sharpness.commands import add_command
from sharpness.config.profiles import DEFAULT_PROFILE, load_profile
from sharpness.errors import ConfigError
from sharpness.io import atomic_write_text


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``cost`` subcommand."""
    from sharpness.cost import DEFAULT_TFLOPS

    parser = add_command(
        subparsers, "cost", "runs, optimizer steps and GPU-hours of a profile, per item and in "
        "total", description="Price a workflow profile before running it: runs, optimizer "
        "steps and GPU-hours per item and in total (measured step times on a CUDA device, else "
        "an analytic FLOP estimate).", profile=DEFAULT_PROFILE)
    parser.add_argument("--item", default=None, help="only this item (e.g. table_imagenet)")
    parser.add_argument("--method", choices=("auto", "measured", "analytic"), default="auto",
                        help="auto: measured on CUDA, analytic without it")
    parser.add_argument("--tflops", default=str(DEFAULT_TFLOPS), metavar="RATES",
                        help=f"sustained TFLOP/s of one GPU for the analytic estimate, per "
                             f"precision (fp32=20,bf16=40) or one number, the bf16 rate "
                             f"(default {DEFAULT_TFLOPS:g}, fp32 half of it)")
    parser.add_argument("--tflops-fp32", type=float, default=None,
                        help="sustained fp32 TFLOP/s of one GPU for the analytic estimate "
                             "(the same as --tflops fp32=N)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    parser.add_argument("--measured", default=None, metavar="YAML",
                        help="step times to price from (written by `sharpness cost measure`; "
                             "default src/sharpness/cost/measured.yaml)")
    parser.set_defaults(func=run)
    sub = parser.add_subparsers(dest="action", metavar="measure")
    measure = add_command(
        sub, "measure", "time the real training step of every run shape a profile uses",
        description="Time the engine's own training step (data pipeline, determinism, each "
        "optimizer's passes; warm-up excluded) for every (model, data set, width, batch, "
        "optimizer, precision) the profile's runs use, on the device present, and write the "
        "step times with the device, the commit and the date.", profile=DEFAULT_PROFILE,
        func=run_measure)
    measure.add_argument("--out", default=None,
                         help="file to write (default src/sharpness/cost/measured.yaml)")
    measure.add_argument("--precision", default="fp32,bf16",
                         help="precisions to time, comma-separated (default fp32,bf16)")
    measure.add_argument("--paper", default=None, help="only this paper's runs (e.g. lesam)")
    measure.add_argument("--warmup", type=int, default=3, help="untimed steps first (3)")
    measure.add_argument("--steps", type=int, default=10, help="timed steps (10)")
    measure.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda")
    measure.add_argument("--tiny", action="store_true",
                         help="a CPU check of the path: 1 warm-up and 2 timed steps, fp32 only")
    measure.add_argument("--note", default="", help="a line for the file's head")
    measure.add_argument("--plan", default=None, metavar="JSON",
                         help="only the runs a plan bought (its record, plans/plan.json)")
    measure.add_argument("--recipes", default="configured",
                         help="configured (as the profile sets precision and determinism) "
                              "and/or fast (bf16, cuDNN autotuning), comma-separated")
    measure.add_argument("--packed", default="1",
                         help="runs of a shape at once on the device, e.g. 1,2,4,8 (each "
                              "count measured; prices read the runs alone, 1)")


def stand_in_warning(config: dict[str, Any]) -> str | None:
    """The warning naming the lesam groups of a paper profile whose planned training runs
    carry stand-ins (inherited from the quick profile); None when none do."""
    if config.get("profile") != "paper" or not config.get("lesam"):
        return None
    from sharpness.jobs import build_plan
    from sharpness.lesam.jobs import train_runs

    tainted = sorted({r.group for r in train_runs(build_plan(config)).values()
                      if r.config.get("stand_ins")})
    if not tainted:
        return None
    return (f"warning: in this profile the lesam group(s) {', '.join(tainted)} carry "
            f"stand_ins; they are priced as the workflow would run them")


def rates_of(tflops: str | float, tflops_fp32: float | None = None) -> dict[str, float]:
    """The analytic rates per precision from ``--tflops`` (and ``--tflops-fp32``)."""
    from sharpness.cost import parse_tflops

    try:
        rates = parse_tflops(str(tflops))
    except ValueError as err:
        raise ConfigError(str(err)) from err
    if tflops_fp32 is not None:
        if tflops_fp32 <= 0:
            raise ConfigError("--tflops-fp32 must be positive")
        rates["fp32"] = tflops_fp32
    return rates


def run_measure(args: argparse.Namespace) -> int:
    """Measure every run shape of the profile, write the step times."""
    from importlib import resources

    from sharpness import cost
    from sharpness.cost import measure as meas
    from sharpness.device import resolve_device

    config = load_profile(args.configfile, None if args.base == "none" else args.base)
    jobs = [j for j in cost.plan_jobs(config) if args.paper in (None, j.paper)]
    if args.plan:  # the shapes of the runs a plan bought, not the whole profile's
        bought = set(json.loads(Path(args.plan).read_text())["run_keys"])
        jobs = [j for j in jobs if f"{j.paper}:{j.run}" in bought]
    if not jobs:
        raise ConfigError(f"sharpness cost measure: no run of {args.paper or 'any paper'} in "
                          "this profile")
    precisions = ["fp32"] if args.tiny else [p.strip() for p in args.precision.split(",")]
    unknown = set(precisions) - {"fp32", "bf16"}
    if unknown:
        raise ConfigError(f"--precision: unknown {sorted(unknown)} (fp32, bf16)")
    device = str(resolve_device(args.device))
    warmup, steps = (1, 2) if args.tiny else (args.warmup, args.steps)
    root = (config.get("data") or {}).get("root")
    recipes = [r.strip() for r in args.recipes.split(",") if r.strip()]
    packs = [int(k) for k in str(args.packed).split(",") if k.strip()]
    out = args.out or str(resources.files("sharpness.cost").joinpath(cost.MEASURED))
    note = args.note or (f"profile {config.get('profile', '?')}, {warmup} warm-up and {steps} "
                         f"timed steps per shape")
    entries = meas.measure(jobs, device=device, precisions=precisions, warmup=warmup,
                           steps=steps, data_root=root, log=lambda t: print(t, flush=True),
                           recipes=recipes, packs=packs,
                           sink=lambda got: meas.write(got, out, note=note))
    path = meas.write(entries, out, note=note)
    print(f"{len(entries)} step times measured on {entries[0]['device']} written to {path}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Plan, price, print."""
    import torch

    from sharpness import cost
    from sharpness.cost.price import gpu_name, measured_note
    from sharpness.device import resolve_device

    if not args.configfile and args.base == "none":
        raise ConfigError("sharpness cost: give --configfile or a --base config")
    config = load_profile(args.configfile, None if args.base == "none" else args.base)
    jobs = cost.plan_jobs(config)
    if args.item is not None and args.item not in set(cost.iter_items(jobs)):
        raise ConfigError(f"--item {args.item!r}: not an item of this profile; known: "
                          f"{', '.join(cost.iter_items(jobs))}")
    if args.item is not None:
        jobs = [j for j in jobs if args.item in j.items]
    device = resolve_device("auto")
    method = args.method
    if method == "auto":
        method = "measured" if device.type == "cuda" else "analytic"
    rates = rates_of(args.tflops, args.tflops_fp32)
    tables = {mode: cost.table(cost.price(jobs, method=method, device=device, precision=mode,
                                          rates=rates, measured=args.measured), args.item)
              for mode in ("fp32", "bf16")}
    profile = config.get("profile", "?")
    fp32 = rates["fp32"]
    given_fp32 = args.tflops_fp32 is not None or "fp32=" in str(args.tflops)
    if method == "measured":
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "the CPU"
        header = (f"Profile `{profile}`: GPU-hours from step times measured on {name} (10 "
                  f"timed SGD steps per model and per-device batch, in fp32 and under bf16 "
                  f"autocast; SAM-type steps count 2 passes, GLMC doubles them). Training runs only.")
    else:
        header = (f"Profile `{profile}`: **ESTIMATE** from analytic FLOPs (forward FLOPs "
                  f"counted on the model, x3 for forward+backward, SAM-type steps 2 passes, GLMC x2) "
                  f"at an assumed {rates['bf16']:g} TFLOP/s sustained per GPU in bf16 "
                  f"({cost.TFLOPS_SOURCE}) and {fp32:g} TFLOP/s in fp32 ("
                  f"{'given' if given_fp32 else cost.FP32_SOURCE}). No GPU was "
                  f"used. Training runs only.")
    if cost.measured_throughputs(args.measured):
        header += (f" Shapes measured by `sharpness cost measure` "
                   f"({args.measured or 'sharpness/cost/measured.yaml'}) are priced from "
                   "that measurement, which names the device and the commit.")
        note = measured_note(args.measured, gpu_name(device))
        header += f" {note[0].upper()}{note[1:]}." if note else ""
    configured = sorted({job.precision for job in jobs})
    header += (f" As configured the runs train in {' and '.join(configured) or 'fp32'} (fp32 "
               "as the official codes train; `bf16: true` is the speed option). Full-batch runs "
               "stop at their loss goal: eos runs with measured step counts are priced at "
               "their expected steps, `(≤ Y at the step cap)` beside them; `≤ X`: priced at "
               "the caps, an upper bound. Shared runs count in each item that reads them and "
               "once in the total.")
    text = cost.render_precisions(tables, header)
    warning = stand_in_warning(config)
    if warning:
        print(warning, file=sys.stderr)
    print(text)
    if args.out:
        atomic_write_text(Path(args.out), text + "\n")
    return 0
