"""``sharpness gradcam train|maps|figure``: the `minorfirst` Grad-CAM study (item `gradcam`).

::

    sharpness gradcam train  --config-file FILE --dataset mnist --out RUNS/mnist  # every optimizer
    sharpness gradcam maps   --config-file FILE --dataset mnist --runs RUNS/mnist --out MAPS/mnist
    sharpness gradcam figure --config-file FILE --out figures/minorfirst/gradcam.pdf \\
                             --table figures/minorfirst/gradcam_table.md

The workflow's jobs pass ``--config-file``: the file the build's plan wrote for the job
(:mod:`sharpness.gradcam.jobs`: a training or maps job's file holds the part of the config's
``gradcam`` section it reads, the figure's ``{"params": <the section>, "maps": ["KEY=DIR",
...]}``); the job records the file's path and SHA-256 in its provenance (``config_file``).
By hand, ``--params JSON`` (the section, or the part the action reads) replaces the file, and
the figure then takes its maps folders as ``--maps KEY=DIR ...``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sharpness.commands import add_action, add_command
from sharpness.errors import ConfigError
from sharpness.runs.lock import run_lock

#: the keys of the gradcam section each action reads
NEEDS = {"train": ("datasets", "optimizers", "alphas", "seeds", "train"),
         "maps": ("datasets", "optimizers", "alphas", "seeds", "panel"),
         "figure": ("datasets", "optimizers", "alphas", "seeds", "panel")}


def _settings(parser: argparse.ArgumentParser) -> None:
    """``--config-file FILE`` (the workflow's) or ``--params JSON`` (by hand): one of them."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--config-file", metavar="FILE",
                       help="the job's config file (JSON) the workflow's plan wrote")
    group.add_argument("--params", help="the config's gradcam section as JSON (by hand)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gradcam train``, ``gradcam maps`` and ``gradcam figure``."""
    parser = add_command(
        subparsers, "gradcam", "minorfirst on real images: Grad-CAM of GD vs SAM CNNs",
        description="Train CNNs (optimizer x init scale x seed), explain a fixed panel of test "
                    "images with Grad-CAM, and tabulate the share of attention on background "
                    "pixels.")
    sub = parser.add_subparsers(dest="action", required=True)
    tr = add_action(sub, "train", _train, "train every optimizer, init scale and seed of one "
                    "data set, one after the other in one process (per optimizer: runs.json + "
                    "one run folder each)",
                    out="the data set's runs folder (each optimizer goes to OUT/<optimizer>/)",
                    threads=True, root="--data-root")
    _settings(tr)
    tr.add_argument("--dataset", required=True, help="a key of params.datasets")
    tr.add_argument("--optimizer", action="append", default=None,
                    help="a key of params.optimizers (repeatable; default: every one)")
    mp = add_action(sub, "maps", _maps, "Grad-CAM maps and background shares of every model "
                    "of one data set on the shared panel (maps.npz)",
                    out="output folder (maps.npz, provenance.json)", root="--data-root",
                    threads=True)
    _settings(mp)
    mp.add_argument("--dataset", required=True, help="a key of params.datasets")
    mp.add_argument("--runs", required=True, help="folder holding <optimizer>/<run> folders")
    fg = add_action(sub, "figure", _figure, "figure grid and background-share table",
                    out="figure path (.pdf; .png and .csv too)")
    _settings(fg)
    fg.add_argument("--maps", nargs="+", default=None, metavar="KEY=DIR",
                    help="data-set key and its maps folder, in figure order (with --params; "
                         "a --config-file names them)")
    fg.add_argument("--table", required=True, help="table path (.md; .tex and .csv too)")


def _checked(params: Any, action: str, where: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(params).__name__}")
    missing = [k for k in NEEDS[action] if k not in params]
    if missing:
        raise ConfigError(f"{where}: gradcam params lack key(s) {', '.join(missing)}")
    return params


def _job(args: argparse.Namespace) -> tuple[dict[str, Any], Any, dict[str, str] | None]:
    """The action's params, the file's other content (the figure's maps; None from
    ``--params``) and the file it came from (``{"path", "sha256"}``; None from ``--params``)."""
    from sharpness.jobs.files import read_job_object

    if args.config_file is None:
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--params is not valid JSON: {exc}") from None
        return _checked(params, args.action, "--params"), None, None
    content, source = read_job_object(args.config_file)
    where = f"--config-file {args.config_file!r}"
    if args.action != "figure":
        return _checked(content, args.action, where), None, source
    maps = content.get("maps")
    if not isinstance(maps, list) or not all(isinstance(m, str) for m in maps):
        raise ConfigError(f"{where}: expected \"maps\", a list of \"KEY=DIR\" strings")
    return _checked(content.get("params"), args.action, f"{where} (its params)"), maps, source


def _train(args: argparse.Namespace) -> int:
    from sharpness.gradcam.study import train_group, write_group

    params, _, source = _job(args)
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
            write_group(params, out, summary, config_file=source)
        for run in summary["runs"]:
            print(f"{args.dataset} {optimizer} alpha={run['alpha']:g} seed={run['seed']}: "
                  f"{run['status']}, test acc {run['final_test_acc']:.3f}", flush=True)
    return 0


def _maps(args: argparse.Namespace) -> int:
    from sharpness.gradcam.study import compute_maps

    with run_lock(args.out, what="gradcam maps"):
        params, _, source = _job(args)
        result = compute_maps(params, args.dataset, args.runs, args.out,
                              root=args.data_root, threads=args.threads, config_file=source)
    print(f"{args.dataset}: shares array {result['shares'].shape}")
    return 0


def _figure(args: argparse.Namespace) -> int:
    from sharpness.gradcam.figures import make_outputs

    params, maps, _ = _job(args)
    if maps is None and not args.maps:
        raise ConfigError("gradcam figure: --maps KEY=DIR ... is required with --params")
    if maps is not None and args.maps:
        raise ConfigError("gradcam figure: --maps goes with --params; a --config-file names "
                          "the maps folders itself")
    dirs = {}
    for item in maps if maps is not None else args.maps:
        key, sep, path = item.partition("=")
        if not sep:
            raise ConfigError(f"--maps {item!r}: expected KEY=DIR")
        dirs[key] = path
    result = make_outputs(params, dirs, args.out, args.table)
    for row in result["rows"]:
        print(f"{row['dataset']:8s} {row['optimizer']:9s} alpha={row['alpha']:<5g} "
              f"share {row['share_mean']:.3f} ± {row['share_ci']:.3f} (n={row['n_maps']}, "
              f"chance {row['chance']:.3f}, test acc {row['test_acc']:.3f})")
    print(result["sentence"])
    return 0
