"""Per-job start-up cost of the `sharpness` CLI: CPU time to import what each job kind needs.

Every Snakemake job is one `sharpness ...` process, so its import time is paid once per job.
For each entry below a fresh interpreter imports the CLI (building the parser, as every call
does) and then the module(s) that job kind runs; reported are user+sys CPU seconds (median of
`--repeat` runs, from `resource.getrusage` of the child) and whether torch got imported. Run on
an idle machine for absolute numbers; on a loaded one the CPU seconds are still comparable.

    .venv/bin/python benchmarks/bench_startup.py [--repeat 3] [--out benchmarks/measured/startup.md]

With ``--out`` the table, with the commit, date and machine, is written to that file (the
committed measurement the README's ``startup`` block shows; ``sharpness readme refresh``
copies it there).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

#: a pseudo-module: the snippet takes one optimizer step where this name stands
FIRST_STEP = ":first-step"

JOBS = {
    "parser only (sharpness --help)": [],
    "eos figure": ["sharpness.eos.figures"],
    "eos toy": ["sharpness.eos.toy"],
    "eos run (flow + GD)": ["sharpness.eos.sweep", "sharpness.eos.flow"],
    "lesam figure/table": ["sharpness.lesam.figures", "sharpness.lesam.tables"],
    "minorfirst run/figure": ["sharpness.minorfirst.compute", "sharpness.minorfirst.plots"],
    "gradcam figure/table": ["sharpness.gradcam.figures"],
    "bridges lesam_diagonal": ["sharpness.bridges.lesam_diagonal",
                               "sharpness.bridges.lesam_diagonal_plot"],
    "bridges sam_eos figure": ["sharpness.bridges.sam_eos_plot"],
    "train (any training job)": ["sharpness.train"],
    # what a training job does before its first batch is done: deterministic mode on, the
    # project's optimizer built and stepped once (torch.optim's own step and
    # torch.use_deterministic_algorithms import torch._dynamo in torch 2.14.1;
    # sharpness.optim.eager does not)
    "train + its first optimizer step": ["sharpness.train", FIRST_STEP],
    "import torch alone": ["torch"],
}

SNIPPET = """
import importlib, sys
mods = sys.argv[1:]
if not (mods == ["torch"]):
    import sharpness.cli
    sharpness.cli.build_parser()
for m in mods:
    if m == ":first-step":
        import torch
        from sharpness.optim import build_optimizer
        from sharpness.train.engine import deterministic_mode
        model = torch.nn.Linear(8, 2)
        opt = build_optimizer("sgd", model, lr=0.1)
        def closure():
            loss = model(torch.ones(4, 8)).square().mean()
            loss.backward()
            return loss
        with deterministic_mode(True, torch.device("cpu")):
            opt.step(closure)
    else:
        importlib.import_module(m)
print("torch" in sys.modules)
"""


def cpu_of(modules: list[str]) -> tuple[float, bool]:
    """CPU seconds (user+sys) of a fresh interpreter importing ``modules``; torch imported?"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", SNIPPET, *modules], check=True,
                         capture_output=True, text=True).stdout.strip()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, out.endswith("True")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _commit() -> str:
    here = Path(__file__).resolve().parent
    done = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True, text=True).stdout
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per job kind (median)")
    parser.add_argument("--out", default=None, help="also write the table, dated, here")
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [f"Measured on {datetime.datetime.now(datetime.UTC):%Y-%m-%d} by "
             f"`benchmarks/bench_startup.py` at commit {_commit()}: CPU seconds (user+sys, "
             f"median of {args.repeat}) a fresh interpreter spends importing what each job "
             f"kind needs, on {os.cpu_count()} cores ({_cpu()}), "
             f"load average before the run {load}.", "",
             f"| job kind | CPU s (median of {args.repeat}) | imports torch |", "|---|---:|---|"]
    print("\n".join(lines), flush=True)
    for name, modules in JOBS.items():
        runs = [cpu_of(modules) for _ in range(args.repeat)]
        cpu = statistics.median(r[0] for r in runs)
        lines.append(f"| {name} | {cpu:.2f} | {'yes' if runs[0][1] else 'no'} |")
        print(lines[-1], flush=True)
    if args.out:
        from sharpness.io import atomic_write_text  # after the measurement: a link is replaced

        atomic_write_text(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
