"""``sharpness gradcam train|maps|figure``: the `minorfirst` Grad-CAM study (item `gradcam`).

::

    sharpness gradcam train  --params JSON --dataset mnist --out RUNS/mnist   # every optimizer
    sharpness gradcam maps   --params JSON --dataset mnist --runs RUNS/mnist --out MAPS/mnist
    sharpness gradcam figure --params JSON --maps mnist=MAPS/mnist svhn=MAPS/svhn ... \\
                             --out figures/minorfirst/gradcam.pdf \\
                             --table figures/minorfirst/gradcam_table.md

``--params`` is the config's ``gradcam`` section as JSON (the rules pass it whole).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sharpness.commands import add_action, add_command
from sharpness.errors import ConfigError
from sharpness.runs.lock import run_lock


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gradcam train``, ``gradcam maps`` and ``gradcam figure``."""
    parser = add_command(
        subparsers, "gradcam", "minorfirst on real images: Grad-CAM of GD vs SAM CNNs",
        description="Train CNNs (optimizer x init scale x seed), explain a fixed panel of test "
                    "images with Grad-CAM, and tabulate the share of attention on background "
                    "pixels.")
    sub = parser.add_subparsers(dest="action", required=True)
    section = "the config's gradcam section as JSON"
    tr = add_action(sub, "train", _train, "train every optimizer, init scale and seed of one "
                    "data set, one after the other in one process (per optimizer: runs.json + "
                    "one run folder each)", params=section,
                    out="the data set's runs folder (each optimizer goes to OUT/<optimizer>/)",
                    threads=True)
    tr.add_argument("--dataset", required=True, help="a key of params.datasets")
    tr.add_argument("--data-root", default="data",
                    help="the data folder (config data.root; a data set's own data_root wins)")
    tr.add_argument("--optimizer", action="append", default=None,
                    help="a key of params.optimizers (repeatable; default: every one)")
    mp = add_action(sub, "maps", _maps, "Grad-CAM maps and background shares of every model "
                    "of one data set on the shared panel (maps.npz)", params=section,
                    out="output folder (maps.npz, provenance.json)", root="--root",
                    threads=True)
    mp.add_argument("--dataset", required=True, help="a key of params.datasets")
    mp.add_argument("--runs", required=True, help="folder holding <optimizer>/<run> folders")
    fg = add_action(sub, "figure", _figure, "figure grid and background-share table",
                    params=section, out="figure path (.pdf; .png and .csv too)")
    fg.add_argument("--maps", nargs="+", required=True, metavar="KEY=DIR",
                    help="data-set key and its maps folder, in figure order")
    fg.add_argument("--table", required=True, help="table path (.md; .tex and .csv too)")


def _params(text: str) -> dict[str, Any]:
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--params is not valid JSON: {exc}") from None
    missing = [k for k in ("datasets", "optimizers", "alphas", "seeds", "train", "panel")
               if k not in params]
    if missing:
        raise ConfigError(f"gradcam params lack key(s) {', '.join(missing)}")
    return params


def _train(args: argparse.Namespace) -> int:
    from sharpness.gradcam.study import train_group, write_group

    params = _params(args.params)
    for spec in params["datasets"].values():  # every run reads the workflow's data folder
        if isinstance(spec, dict):
            spec.setdefault("data_root", args.data_root)
    optimizers = args.optimizer or list(params["optimizers"])
    unknown = [o for o in optimizers if o not in params["optimizers"]]
    if unknown:
        raise ConfigError(f"--optimizer {', '.join(unknown)}: not in the params' optimizers "
                          f"({', '.join(params['optimizers'])})")
    summaries = {}
    for optimizer in optimizers:  # every group trained first ...
        out = Path(args.out) / optimizer
        with run_lock(out, what="gradcam runs"):
            summaries[optimizer] = train_group(params, args.dataset, optimizer, out,
                                               threads=args.threads, write=False)
    for optimizer, summary in summaries.items():  # ... then every runs.json (the outputs)
        out = Path(args.out) / optimizer
        with run_lock(out, what="gradcam runs"):
            write_group(params, out, summary)
        for run in summary["runs"]:
            print(f"{args.dataset} {optimizer} alpha={run['alpha']:g} seed={run['seed']}: "
                  f"{run['status']}, test acc {run['final_test_acc']:.3f}", flush=True)
    return 0


def _maps(args: argparse.Namespace) -> int:
    from sharpness.gradcam.study import compute_maps

    with run_lock(args.out, what="gradcam maps"):
        result = compute_maps(_params(args.params), args.dataset, args.runs, args.out,
                              root=args.root, threads=args.threads)
    print(f"{args.dataset}: shares array {result['shares'].shape}")
    return 0


def _figure(args: argparse.Namespace) -> int:
    from sharpness.gradcam.figures import make_outputs

    dirs = {}
    for item in args.maps:
        key, sep, path = item.partition("=")
        if not sep:
            raise ConfigError(f"--maps {item!r}: expected KEY=DIR")
        dirs[key] = path
    result = make_outputs(_params(args.params), dirs, args.out, args.table)
    for row in result["rows"]:
        print(f"{row['dataset']:8s} {row['optimizer']:9s} alpha={row['alpha']:<5g} "
              f"share {row['share_mean']:.3f} ± {row['share_ci']:.3f} (n={row['n_maps']}, "
              f"chance {row['chance']:.3f}, test acc {row['test_acc']:.3f})")
    print(result["sentence"])
    return 0
