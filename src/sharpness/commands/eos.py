"""``sharpness eos toy|run|figure``: the edge-of-stability study (paper `eos`).

* ``eos toy --params JSON --out DIR``: the diagonal toy (flow, GD sweep, minimisers) ->
  ``DIR/toy.json``;
* ``eos run --params JSON --out DIR``: one setting (gradient flow, then the GD sweep) ->
  ``DIR/flow/``, ``DIR/runs/lr_*/`` and ``DIR/sweep.json``;
* ``eos run-many --params JSON --out PARENT``: several settings (a JSON object, name ->
  setting) one after the other in one process, each into ``PARENT/<name>/`` exactly as
  ``eos run`` writes it. A profile runs its ablation variants this way (``eos.ablations.one_job``)
  when the ~7 CPU-s of importing torch in every job would cost more than the variants' work;
* ``eos figure --id ID --inputs FILES... --out PDF``: draw one figure from those files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sharpness.commands import add_action, run_each
from sharpness.errors import ConfigError, reject_unknown
from sharpness.io import atomic_write_json
from sharpness.runs.lock import run_lock
from sharpness.runs.run_record import RunRecord

FIGURE_IDS = ("fig_diagonal", "fig_phase", "fig_test_vs_lr", "fig_trajectories",
              "fig_measures", "fig_ablations")
TOY_KEYS = {"x", "y", "w0", "lrs", "loss_goal", "max_steps", "d2_x", "d2_lrs"}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``eos toy``, ``eos run`` and ``eos figure``."""
    parser = subparsers.add_parser("eos", help="edge-of-stability study (paper eos)")
    sub = parser.add_subparsers(dest="action", required=True)
    add_action(sub, "toy", _toy, "diagonal toy: flow, GD sweep, minimisers -> toy.json",
               params="JSON object (x, y, w0, lrs, ...)", out="output directory")
    add_action(sub, "run", _run, "one setting: gradient flow + GD learning-rate sweep",
               params="JSON object of the setting", out="output directory (sweep.json goes here)",
               root="--data-root", threads=True)
    add_action(sub, "run-many", _run_many,
               "several settings in one process, each as `eos run` writes it",
               params="JSON object: setting name -> setting",
               out="parent folder (each setting goes to PARENT/<name>/)",
               root="--data-root", threads=True)
    fig = add_action(sub, "figure", _figure,
                     "draw one eos figure from toy.json / sweep.json files",
                     out="figure path (.pdf; .png/.csv beside it)")
    fig.add_argument("--id", required=True, choices=FIGURE_IDS, help="the figure to draw")
    fig.add_argument("--inputs", nargs="+", required=True, help="toy.json or sweep.json files")
    fig.add_argument("--dropped", default="{}",
                     help="JSON object: setting -> why this profile leaves it out (caption)")


def _toy(args: argparse.Namespace) -> int:
    from sharpness.eos.toy import toy_study

    params = json.loads(args.params)
    reject_unknown("eos toy", params, TOY_KEYS)
    out = Path(args.out)
    with run_lock(out, what="eos toy"), RunRecord(out, params=params, seed=None) as record:
        result = toy_study(**params)
        atomic_write_json(out / "toy.json", result)
        record.update(s_gf=result["s_gf"], eta_c=result["eta_c"],
                      first_diverged_eta=result["first_diverged_eta"])
        record.outputs("toy.json")  # fig_diagonal checks it against this hash
    return 0


def _run(args: argparse.Namespace) -> int:
    run_one(json.loads(args.params), Path(args.out), args.data_root, args.threads)
    return 0


def _run_many(args: argparse.Namespace) -> int:
    """Every setting in turn; one that fails is recorded in its folder (``failed``) and named,
    the others still run, and the exit code is 1 when any failed."""
    settings = json.loads(args.params)
    if not isinstance(settings, dict) or not settings:
        raise ConfigError("eos run-many --params must be a non-empty JSON object "
                          "(setting name -> setting)")
    return run_each("eos run-many", "setting", settings,
                    lambda name, setting: run_one(setting, Path(args.out) / name,
                                                  args.data_root, args.threads),
                    stop_on=(ConfigError, KeyboardInterrupt))


def run_one(params: dict[str, Any], out: Path, data_root: str, threads: int | None) -> None:
    """One setting into ``out`` under its run lock and provenance record (``eos run``)."""
    from sharpness.eos.sweep import resolve_setting, run_setting

    setting = resolve_setting(params)
    with run_lock(out, what="eos setting"), \
            RunRecord(out, params=setting, seed=setting["seed"],
                      stand_ins=setting["stand_ins"]) as record:
        summary = run_setting(setting, out, data_root=data_root, threads=threads)
        rows = summary["rows"]
        record.update(s_gf=summary["s_gf"], eta_c=summary["eta_c"],
                      flow_status=summary["flow"]["status"],
                      runs={f"{r['lr']:.4g}": r["status"] for r in rows},
                      diverged=sum(r["diverged"] for r in rows))


def _figure(args: argparse.Namespace) -> int:
    from sharpness.eos import figures

    if args.id == "fig_diagonal":
        figures.fig_diagonal(args.inputs[0], args.out)
        return 0
    dropped = json.loads(args.dropped)
    if not isinstance(dropped, dict):
        raise ConfigError(f"eos figure --dropped must be a JSON object, got {args.dropped!r}")
    if dropped and args.id in ("fig_phase", "fig_test_vs_lr"):
        figures.FIGURES[args.id](args.inputs, args.out, dropped=dropped)
    else:
        figures.FIGURES[args.id](args.inputs, args.out)
    return 0
