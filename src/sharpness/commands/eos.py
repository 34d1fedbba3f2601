"""``sharpness eos toy|run|figure``: the edge-of-stability study (paper `eos`).

* ``eos toy --config-file FILE --out DIR``: the diagonal toy (flow, GD sweep, minimisers) ->
  ``DIR/toy.json``;
* ``eos run --config-file FILE --out DIR``: one setting (gradient flow, then the GD sweep) ->
  ``DIR/flow/``, ``DIR/runs/lr_*/`` and ``DIR/sweep.json``;
* ``eos run-many --config-file FILE --out PARENT``: several settings (a JSON object, name ->
  setting) one after the other in one process, each into ``PARENT/<name>/`` exactly as
  ``eos run`` writes it. A profile runs its ablation variants this way (``eos.ablations.one_job``)
  when the ~7 CPU-s of importing torch in every job would cost more than the variants' work;
* ``eos figure --id ID --config-file FILE --out PDF``: draw one figure from the files the
  config file lists (``{"figure", "inputs", "dropped"}``).

``FILE`` is the job's config file the workflow's plan writes (:mod:`sharpness.eos.jobs`); a
run records its path and SHA-256 in its provenance (``config_file``). ``--params JSON`` (and
for a figure ``--inputs FILES... [--dropped JSON]``) gives the same settings inline, for use
by hand; the workflow never uses it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sharpness.commands import add_action, run_each
from sharpness.errors import ConfigError, reject_unknown
from sharpness.io import atomic_write_json
from sharpness.jobs.files import job_settings, read_job_object
from sharpness.runs.lock import run_lock
from sharpness.runs.run_record import RunRecord

FIGURE_IDS = ("fig_diagonal", "fig_phase", "fig_test_vs_lr", "fig_trajectories",
              "fig_measures", "fig_ablations")
TOY_KEYS = {"x", "y", "w0", "lrs", "loss_goal", "max_steps", "d2_x", "d2_lrs"}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``eos toy``, ``eos run`` and ``eos figure``."""
    parser = subparsers.add_parser("eos", help="edge-of-stability study (paper eos)")
    sub = parser.add_subparsers(dest="action", required=True)
    toy = add_action(sub, "toy", _toy, "diagonal toy: flow, GD sweep, minimisers -> toy.json",
                     out="output directory")
    _given(toy, "JSON object (x, y, w0, lrs, ...)")
    run = add_action(sub, "run", _run, "one setting: gradient flow + GD learning-rate sweep",
                     out="output directory (sweep.json goes here)", root="--data-root",
                     threads=True)
    _given(run, "JSON object of the setting")
    many = add_action(sub, "run-many", _run_many,
                      "several settings in one process, each as `eos run` writes it",
                      out="parent folder (each setting goes to PARENT/<name>/)",
                      root="--data-root", threads=True)
    _given(many, "JSON object: setting name -> setting")
    fig = add_action(sub, "figure", _figure,
                     "draw one eos figure from toy.json / sweep.json files",
                     out="figure path (.pdf; .png/.csv beside it)")
    fig.add_argument("--id", required=True, choices=FIGURE_IDS, help="the figure to draw")
    one = fig.add_mutually_exclusive_group(required=True)
    one.add_argument("--config-file", metavar="PATH",
                     help="the figure's file as the workflow writes it: "
                          '{"figure", "inputs", "dropped"}')
    one.add_argument("--inputs", nargs="+", help="toy.json or sweep.json files")
    fig.add_argument("--dropped", default=None,
                     help="JSON object: setting -> why this profile leaves it out (caption; "
                          "with --inputs)")


def _given(parser: argparse.ArgumentParser, params: str) -> None:
    """``--config-file PATH`` (the job's file the workflow writes, recorded with its SHA-256
    in the run's provenance) or ``--params JSON`` (the same settings inline), one of them."""
    one = parser.add_mutually_exclusive_group(required=True)
    one.add_argument("--config-file", metavar="PATH",
                     help="the job's config file as the workflow writes it (its path and "
                          "SHA-256 go into the run's provenance)")
    one.add_argument("--params", help=params)


def _settings(args: argparse.Namespace, expected: str = "a JSON object"
              ) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The settings a run reads and the file they came from (path and SHA-256; ``None`` for
    ``--params``); ``expected`` says what ``--params`` must hold, in its error."""
    # a Namespace made in code may lack config_file
    return job_settings(getattr(args, "config_file", None), args.params, expected)


def _toy(args: argparse.Namespace) -> int:
    from sharpness.eos.toy import toy_study

    params, source = _settings(args)
    reject_unknown("eos toy", params, TOY_KEYS)
    out = Path(args.out)
    with run_lock(out, what="eos toy"), RunRecord(out, params=params, seed=None) as record:
        if source is not None:  # the file the job read its settings from
            record.update(config_file=source)
        result = toy_study(**params)
        atomic_write_json(out / "toy.json", result)
        record.update(s_gf=result["s_gf"], eta_c=result["eta_c"],
                      first_diverged_eta=result["first_diverged_eta"])
        record.outputs("toy.json")  # fig_diagonal checks it against this hash
    return 0


def _run(args: argparse.Namespace) -> int:
    params, source = _settings(args)
    run_one(params, Path(args.out), args.data_root, args.threads, config_file=source)
    return 0


def _run_many(args: argparse.Namespace) -> int:
    """Every setting in turn; one that fails is recorded in its folder (``failed``) and named,
    the others still run, and the exit code is 1 when any failed.

    The settings' ``sweep.json`` are sealed together once every setting has finished. A job
    cut before its end (killed, or one setting failed) leaves none sealed, so when Snakemake
    deletes the job's outputs before running it again, each setting resumes from its flow
    and runs, the finished ones included; a sealed result that is gone means a finished job
    was forced to rerun, and its settings start over (:mod:`sharpness.runs.restart`)."""
    from sharpness.runs.seal import seal

    settings, source = _settings(args, "a non-empty JSON object (setting name -> setting)")
    if not settings:
        raise ConfigError("eos run-many: the settings must be a non-empty JSON object "
                          "(setting name -> setting)")
    code = run_each("eos run-many", "setting", settings,
                    lambda name, setting: run_one(setting, Path(args.out) / name,
                                                  args.data_root, args.threads,
                                                  config_file=source, seal_result=False),
                    stop_on=(ConfigError, KeyboardInterrupt))
    if code == 0:
        for name in settings:
            seal(Path(args.out) / name, "sweep.json")
    return code


def run_one(params: dict[str, Any], out: Path, data_root: str, threads: int | None,
            config_file: dict[str, str] | None = None, seal_result: bool = True) -> None:
    """One setting into ``out`` under its run lock and provenance record (``eos run``);
    ``config_file`` (the file the settings came from: path and SHA-256) goes into the
    record; ``seal_result``: seal its ``sweep.json`` (``run-many`` seals them together)."""
    from sharpness.eos.setting import resolve_setting
    from sharpness.eos.sweep import run_setting

    setting = resolve_setting(params)
    with run_lock(out, what="eos setting"), \
            RunRecord(out, params=setting, seed=setting["seed"],
                      stand_ins=setting["stand_ins"]) as record:
        if config_file is not None:  # the file the job read its settings from
            record.update(config_file=dict(config_file))
        summary = run_setting(setting, out, data_root=data_root, threads=threads,
                              seal_result=seal_result)
        rows = summary["rows"]
        record.update(s_gf=summary["s_gf"], eta_c=summary["eta_c"],
                      flow_status=summary["flow"]["status"],
                      runs={f"{r['lr']:.4g}": r["status"] for r in rows},
                      diverged=sum(r["diverged"] for r in rows))


def _figure(args: argparse.Namespace) -> int:
    from sharpness.eos import figures

    inputs, dropped = _figure_inputs(args)
    if args.id == "fig_diagonal":
        figures.fig_diagonal(inputs[0], args.out)
        return 0
    if dropped and args.id in ("fig_phase", "fig_test_vs_lr"):
        figures.FIGURES[args.id](inputs, args.out, dropped=dropped)
    else:
        figures.FIGURES[args.id](inputs, args.out)
    return 0


def _figure_inputs(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The files a figure draws and the settings its profile dropped: from its config file
    (which names the same figure as ``--id``), else from ``--inputs`` and ``--dropped``."""
    if getattr(args, "config_file", None) is None:
        try:
            dropped = json.loads(args.dropped or "{}")
        except json.JSONDecodeError as exc:
            raise ConfigError(f"eos figure --dropped is not valid JSON: {exc}") from None
        if not isinstance(dropped, dict):
            raise ConfigError(f"eos figure --dropped must be a JSON object, got "
                              f"{args.dropped!r}")
        return list(args.inputs), dropped
    if args.dropped is not None:
        raise ConfigError("eos figure: --dropped goes with --inputs; with --config-file the "
                          "file holds it")
    spec, _ = read_job_object(args.config_file)
    where = f"--config-file {args.config_file!r}"
    if spec.get("figure") != args.id:
        raise ConfigError(f"{where} is the file of figure {spec.get('figure')!r}, not of "
                          f"--id {args.id}")
    inputs, dropped = spec.get("inputs"), spec.get("dropped", {})
    if not isinstance(inputs, list) or not inputs or not isinstance(dropped, dict):
        raise ConfigError(f"{where}: expected \"inputs\" (a non-empty list of files) and "
                          "\"dropped\" (an object)")
    return [str(p) for p in inputs], dropped
