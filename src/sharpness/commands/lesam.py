"""``sharpness lesam ...``: the steps of the `lesam` paper's (LE-SAM) tables and figures.

The run and evaluation subcommands take ``--params``: the part of the config's ``lesam``
section they read, as JSON (:func:`sharpness.lesam.steps.step_section`), from which run
settings are looked up by id. ``build`` takes only the item's own settings
(``lesam.items.<item>``) and the run folders it draws (their files, ``--runs``), whose
records say what each run was (:mod:`sharpness.lesam.records`).

* ``lesam glmc --run ID --out DIR``: one long-tail GLMC run;
* ``lesam signal --run LABEL --out DIR``: one ``fig_signal`` run with curvature probes;
  both take ``--config-file FILE`` (the run's file the workflow writes,
  :meth:`sharpness.jobs.Plan.write`, recorded with its SHA-256 in the run's
  provenance) instead of ``--params``; ``eval`` and ``build`` take it too, in place of
  ``--params``, ``--runs`` and ``--evaluation`` (the file holds all three);
* ``lesam eval {robustness,domain_gen,flatness,cost} --out FILE``: evaluate finished runs;
* ``lesam build ITEM --params SPEC --runs FILE... [--evaluation FILE] --out PATH``: write a
  table (.md/.tex/.csv) or figure (.pdf/.png/.csv);
* ``lesam check-imagenet --path P --out FILE``: stop with a clear message if ImageNet is absent.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sharpness.commands import add_flags
from sharpness.errors import ConfigError
from sharpness.io import atomic_write_json
from sharpness.runs.lock import run_lock
from sharpness.runs.provenance import write_artifact_provenance

EVALS = ("robustness", "domain_gen", "flatness", "cost")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``lesam`` and its subcommands."""
    parser = subparsers.add_parser("lesam", help="the lesam paper (LE-SAM): runs, evaluations, "
                                   "tables and figures")
    sub = parser.add_subparsers(dest="lesam_command", required=True)

    def given(p: argparse.ArgumentParser, params: str, file: str) -> None:
        """``--params JSON`` or ``--config-file PATH`` (the job's file the workflow writes,
        :meth:`sharpness.jobs.Plan.write`), one of them."""
        one = p.add_mutually_exclusive_group(required=True)
        one.add_argument("--params", help=params)
        one.add_argument("--config-file", metavar="PATH", help=file)

    def common(p: argparse.ArgumentParser) -> None:
        given(p, "the config's lesam section as JSON",
              "the run's config file as the workflow writes it, recorded (path and SHA-256) "
              "in the run's provenance")
        add_flags(p, out="output directory or file", threads=True)

    p = sub.add_parser("glmc", help="one GLMC long-tail run")
    p.add_argument("--run", required=True, help="run id, e.g. lt100-lesam-s0")
    common(p)
    p.add_argument("--data-root", default=None,
                   help="the data folder (config data.root) when the run's config names none")
    p.set_defaults(func=_glmc)
    p = sub.add_parser("signal", help="one fig_signal run (first-order vs curvature term)")
    p.add_argument("--run", required=True, help="optimizer label in lesam.signal.optimizers")
    common(p)
    p.add_argument("--data-root", default=None,
                   help="the data folder (config data.root) when the run's config names none")
    p.set_defaults(func=_signal)
    p = sub.add_parser("eval", help="evaluate finished runs")
    p.add_argument("what", choices=EVALS, help="which evaluation")
    p.add_argument("--data-root", default=None,
                   help="the data folder (config data.root) of the cost evaluation's runs "
                        "when its config names none (trained runs read their own record's)")
    given(p, "the evaluated item's settings as JSON (lesam.items.<item>; the cost "
          "evaluation's also its config and optimizer_hparams)",
          "the job's file as the workflow writes it: the settings (params) and the runs")
    add_flags(p, out="the evaluation file", threads=True)
    p.add_argument("--runs", nargs="*", default=[], help="final.json of each run the "
                   "evaluation may read: the folder's record says which run it is (with "
                   "--config-file: the file's runs)")
    p.set_defaults(func=_eval)
    p = sub.add_parser("build", help="write one table or figure")
    p.add_argument("item", help="catalog id, e.g. table_cifar or fig_signal")
    given(p, "the item's settings (lesam.items.<item>) as JSON",
          "the job's file as the workflow writes it: the settings (params), the runs and "
          "the evaluation drawn")
    add_flags(p, out="the table's .md or the figure's .pdf")
    p.add_argument("--runs", nargs="*", default=[], help="a file of each run folder drawn "
                   "(final.json, signal.jsonl): the folder's record says which run it is "
                   "(with --config-file: the file's runs)")
    p.add_argument("--evaluation", nargs="?", default=None,
                   help="the evaluation file drawn (results/lesam/eval/<what>.json), if any "
                        "(with --config-file: the file's)")
    p.set_defaults(func=_build)
    p = sub.add_parser("check-imagenet", help="fail clearly unless data.imagenet is usable")
    p.add_argument("--path", default="", help="the value of data.imagenet")
    p.add_argument("--out", required=True, help="a record written when ImageNet is usable")
    p.set_defaults(func=_check_imagenet)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    try:
        return json.loads(args.params)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--params is not valid JSON: {exc}") from None


def _step_file(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], str | None]:
    """An eval or build job's settings, runs and evaluation: from ``--config-file`` (its
    ``params``, ``runs`` and ``evaluation``) when given, else from ``--params``, ``--runs``
    and ``--evaluation``."""
    from sharpness.jobs.files import read_job_file as read_config_file

    if args.config_file is None:
        return _params(args), list(args.runs), getattr(args, "evaluation", None)
    spec, _ = read_config_file(args.config_file)
    if (not isinstance(spec, dict) or not isinstance(spec.get("params"), dict)
            or not isinstance(spec.get("runs"), list)):
        raise ConfigError(f"--config-file {args.config_file!r}: expected a JSON object with "
                          "\"params\" (an object) and \"runs\" (a list)")
    return spec["params"], [str(r) for r in spec["runs"]], spec.get("evaluation")


def _probe_run(args: argparse.Namespace, step: str, runs_of: Callable[..., Any]
               ) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The GLMC run's or signal probe's spec (``config``, and a probe's ``probe_every``) and
    the file it was read from (``--config-file``: path and SHA-256), or expanded from the
    ``--params`` section (no file)."""
    from sharpness.frozen import thaw
    from sharpness.jobs.files import read_job_file as read_config_file

    if args.config_file is not None:
        spec, source = read_config_file(args.config_file)
        if not isinstance(spec, dict) or not isinstance(spec.get("config"), dict):
            raise ConfigError(f"--config-file {args.config_file!r}: expected a JSON object "
                              "with a \"config\" object")
    else:
        runs = runs_of(_params(args))
        if args.run not in runs:
            raise ConfigError(f"lesam.{step} has no run {args.run!r}; known: "
                              f"{', '.join(runs)}")
        spec, source = thaw(runs[args.run]), None
    if getattr(args, "data_root", None):  # the workflow's data folder, as training jobs get it
        spec["config"].setdefault("data_root", args.data_root)
    return spec, source


def _glmc(args: argparse.Namespace) -> int:
    from sharpness.lesam.experiments import glmc_runs
    from sharpness.lesam.glmc import run_glmc

    spec, source = _probe_run(args, "glmc", glmc_runs)
    with run_lock(args.out, what="GLMC run"):
        final = run_glmc(spec["config"], args.out, threads=args.threads, progress=True,
                         config_file=source)
    print(f"{args.out}: test_acc={final['final_test_acc']:.4f}")
    return 0


def _signal(args: argparse.Namespace) -> int:
    from sharpness.lesam.experiments import signal_runs
    from sharpness.lesam.signal import run_signal

    spec, source = _probe_run(args, "signal", signal_runs)
    if not isinstance(spec.get("probe_every"), int):
        raise ConfigError(f"lesam signal run {args.run!r}: its config has no probe_every")
    with run_lock(args.out, what="signal run"):
        rows = run_signal(spec["config"], args.out, probe_every=spec["probe_every"],
                          threads=args.threads, progress=True, config_file=source)
    print(f"{args.out}: {len(rows)} probes")
    return 0


def _eval(args: argparse.Namespace) -> int:
    import torch

    from sharpness.lesam import evaluate
    from sharpness.lesam.records import read_run, run_folders
    from sharpness.lesam.steps import EVAL_ITEMS

    if args.threads:
        torch.set_num_threads(args.threads)
    spec, run_files, _ = _step_file(args)
    settings = {"evaluation": args.what, **spec}
    what = f"lesam eval {args.what}"
    runs = [read_run(d, what=what) for d in run_folders(run_files)]
    seeds, labels = spec.get("seeds"), spec.get("optimizers")
    # PACS/VLCS name one group per source domain (`groups`), every other item one `group`
    groups = [] if args.what == "cost" else spec.get("groups") or [spec["group"]]
    evaluated = [r.folder for group in groups for r in runs if r.group == group
                 and (labels is None or r.label in labels)
                 and (seeds is None or r.seed in seeds)]
    if args.what != "cost" and not evaluated:
        raise ConfigError(f"{what}: none of the {len(runs)} run(s) given is of "
                          f"{EVAL_ITEMS[args.what]}'s groups {groups}, optimizers and seeds")
    if args.what == "robustness":
        rows = evaluate.robustness_rows(evaluated, radii=spec["radii"], steps=spec["steps"],
                                        n_test=spec.get("n_test"))
    elif args.what == "domain_gen" and "groups" in spec:
        rows = evaluate.domain_rows(evaluated)
    elif args.what == "domain_gen":
        rows = evaluate.rotation_rows(evaluated, angles=spec["angles"])
    elif args.what == "flatness":
        rows = evaluate.flatness_rows(evaluated, n_examples=spec["n_examples"], k=spec["k"],
                                      trace_samples=spec["trace_samples"],
                                      tol=spec.get("tol", 1e-3))
    else:  # no runs read: the settings given (lesam.steps.step_section) say what is timed
        config = dict(spec["config"])  # the record keeps the settings as given
        if args.data_root:  # the workflow's data folder, as training jobs get it
            config.setdefault("data_root", args.data_root)
        rows = evaluate.cost_rows(config, spec["optimizer_hparams"],
                                  steps=spec["steps"], rounds=spec["rounds"],
                                  threads=args.threads)
    atomic_write_json(args.out, rows)
    # the record comes after the file; its inputs are the run folders evaluated (by content),
    # so `sharpness audit` follows a table built from this file back to the training runs
    record = write_artifact_provenance(args.out, kind="evaluation", inputs=evaluated,
                                       params=settings)
    print(f"{args.out}: {len(rows)} rows, provenance {record['id']}")
    return 0


def _build(args: argparse.Namespace) -> int:
    from sharpness.lesam.figures import FIGURES
    from sharpness.lesam.records import Given, read_run, run_folders
    from sharpness.lesam.tables import TABLES

    builders = {**TABLES, **FIGURES}
    if args.item not in builders:
        raise ConfigError(f"unknown lesam item {args.item!r}; known: {', '.join(builders)}")
    what = f"lesam {args.item}"
    spec, run_files, evaluation = _step_file(args)
    given = Given(item=args.item, spec=spec,
                  runs=[read_run(d, what=what) for d in run_folders(run_files)],
                  evaluation=Path(evaluation) if evaluation else None)
    record = builders[args.item](given, args.out)
    print(f"{args.out}: provenance {record['id']}")
    return 0


def _check_imagenet(args: argparse.Namespace) -> int:
    path = Path(args.path) if args.path else None
    if path is None:
        raise ConfigError("config key data.imagenet is not set: table_imagenet (paper profile) "
                          "needs ImageNet ILSVRC-2012 in a folder with train/<wnid>/*.JPEG and "
                          "val/<wnid>/*.JPEG; set data.imagenet to that folder (e.g. "
                          "--config data='{imagenet: /data/imagenet}' or edit "
                          "workflow/config/paper.yaml)")
    missing = [d for d in ("train", "val") if not (path / d).is_dir()]
    if missing:
        raise ConfigError(f"config key data.imagenet = {str(path)!r}: missing sub-folder(s) "
                          f"{', '.join(missing)}; expected train/<wnid>/*.JPEG and "
                          "val/<wnid>/*.JPEG")
    atomic_write_json(args.out, {"imagenet": str(path.resolve()), "ok": True})
    write_artifact_provenance(args.out, kind="check", params={"check": "imagenet folders"})
    return 0
