"""``sharpness train --config JSON_OR_PATH --out RUN_DIR``: one training run.

The config is a JSON object (inline, or a path to a ``.json``/``.yaml`` file); keys in
:mod:`sharpness.train.config`. ``--config-file PATH`` (instead of ``--config``) reads a JSON
file and records its path and SHA-256 in the run's ``provenance.json`` (``config_file``): the
workflow's lesam jobs pass the file the plan wrote for them
(:meth:`sharpness.jobs.Plan.write`), so their command line stays short. Such a file holds
the run's hyper-parameters as the plan resolved them, and the plan's signature beside it
(:mod:`sharpness.jobs.files`): when it holds, the engine checks their names and takes their
values as written (the spec is not asked again), so ``--set`` may not change the optimizer or
its ``opt_hparams`` of a signed file (edit the profile instead). A file without a signature
that holds (written by hand, or changed since) is checked in full, as ``--config`` is.
``--data-root DIR`` sets the data folder (the config's ``data_root``; the spelling the eos
commands use). ``--set key=value`` overrides single keys (values parsed as JSON). The exit code is 0 for a finished run, also a
diverged one (divergence is a result, recorded in ``final.json`` and ``provenance.json``); it
is 2 for a bad config or missing data, 130 / 143 when Ctrl-C / SIGTERM stopped the run (its
record says ``interrupted``; the same command resumes it from its last checkpoint). Progress
goes to stderr: a bar on a terminal, else a line per epoch at most every 15 s.

Hooks named in the config (``sharpness_fn``, ``metrics_fn`` as ``module:function``) are
imported here and passed to the engine; a hook needing settings is a small function in its
own module (e.g. a Lanczos call with its tolerance fixed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
from pathlib import Path
from typing import Any

import yaml

from sharpness.commands import add_command
from sharpness.errors import ConfigError
from sharpness.jobs.files import read_job_file
from sharpness.runs.lock import run_lock

#: the keys of a signed job file whose values the plan resolved (``--set`` leaves them alone)
PLANNED_KEYS = frozenset({"optimizer", "opt_hparams"})


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` subcommand."""
    threads = "torch CPU threads (the rule's threads)"
    parser = add_command(
        subparsers, "train", "train one network (mini-batch or full-batch) into a run directory",
        description="Train one network from a run config; resumes from RUN_DIR/checkpoint.pt "
                    "when present. Writes metrics.jsonl, final.json, model.pt, checkpoint.pt "
                    "and provenance.json.",
        out="run directory", threads=threads)
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--config", help="run config: a JSON object or a path to a .json/.yaml file")
    given.add_argument("--config-file", metavar="PATH",
                       help="run config: a JSON file, recorded (path and SHA-256) in the "
                            "run's provenance")
    parser.add_argument("--data-root", default=None, metavar="DIR",
                        help="data folder (the config's data_root; default: the config's)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config key (VALUE parsed as JSON); repeatable")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show progress: a tqdm bar when stderr is a terminal, else a "
                             "line per epoch at most every 15 s (SHARPNESS_PROGRESS_S) in "
                             "the log (default: on)")
    parser.set_defaults(func=run)


def load_config(text: str) -> dict[str, Any]:
    """Parse ``--config``: inline JSON, or a JSON/YAML file."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--config is not valid JSON: {exc}") from None
    path = Path(text)
    if not path.is_file():
        raise ConfigError(f"--config {text!r} is neither a JSON object nor an existing file")
    if path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(path.read_text())
    return json.loads(path.read_text())


def apply_overrides(cfg: dict[str, Any], items: list[str]) -> dict[str, Any]:
    """Apply ``KEY=VALUE`` overrides (VALUE as JSON, else as a string)."""
    cfg = dict(cfg)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
        try:
            cfg[key] = json.loads(value)
        except json.JSONDecodeError:
            cfg[key] = value
    return cfg


def _load_callable(spec: str | None) -> Any:
    if not spec:
        return None
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load hook {spec!r}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Read the config, train (or resume; the engine validates), print the summary line."""
    source = None
    if args.config_file is not None:
        config, source = read_job_file(args.config_file)
    else:
        config = load_config(args.config)
    if not isinstance(config, dict):
        raise ConfigError(f"train config must be a JSON object, got {type(config).__name__}")
    if args.data_root is not None:
        config = {**config, "data_root": args.data_root}
    if source is not None and "signed_by" in source:
        planned = sorted({item.partition("=")[0] for item in args.set} & PLANNED_KEYS)
        if planned:
            raise ConfigError(f"--set {', '.join(planned)}: a signed --config-file's "
                              "optimizer and hyper-parameters are the plan's (resolved when "
                              "it was built); change them in the profile")
    train_one(apply_overrides(config, args.set), args.out, args.threads, args.progress,
              config_file=source)
    return 0


def train_one(config: dict[str, Any], out: str, threads: int | None, progress: bool,
              config_file: dict[str, str] | None = None) -> None:
    """One run into ``out`` under its run lock; prints the summary line (rank 0).

    The engine validates ``config`` (once; the hyper-parameters of a ``config_file`` its
    plan signed by name only, as the plan resolved them); the hooks it names are loaded here first (a name that
    is not a string is left to that validation to refuse). ``config_file`` (the file it came
    from, path and SHA-256) goes into the run's provenance."""
    from sharpness.train import TrainHooks, train

    def hook(key: str) -> Any:
        name = config.get(key)
        return _load_callable(name if isinstance(name, str) else None)

    hooks = TrainHooks(sharpness=hook("sharpness_fn"), metrics=hook("metrics_fn"))
    # one writer per run folder; under DDP rank 0 writes the files and holds the lock
    with run_lock(out, what="training run", enabled=os.environ.get("RANK", "0") == "0"):
        final = train(config, out, hooks=hooks, threads=threads, progress=progress,
                      config_file=config_file)
    acc = final.get("final_test_acc")
    if os.environ.get("RANK", "0") != "0":  # a DDP run: rank 0 reports
        return
    print(f"{out}: status={final['status']} reason={final['reason']} "
          f"steps={final['steps']} test_acc={acc if acc is None else round(acc, 4)}")
