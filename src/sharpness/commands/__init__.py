"""Subcommands of ``sharpness``; each module defines ``register(subparsers)``.

Imports: a command module imports at its top the standard library and the light shared
modules (``sharpness.errors``, ``io``, ``mappings``, ``runs.*``, ``config.profiles``), and its
actions import the library they run inside their functions. The exception is deliberate and
measured: every ``sharpness`` start (each Snakemake job is one) imports every command module
to build the parser, so a library imported at a command's top would be paid by every job
(torch about 1.3 CPU-s, scipy.stats with pandas about 0.8, matplotlib about 0.4, against
about 0.25 for the whole parser; ``tests/test_startup_imports.py`` pins it), and a rule's code
fingerprint counts its command module's top-level imports (``sharpness.runs.cache``), so a
library there would rerun every rule that uses the command when any of it changed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any


def add_flags(parser: argparse.ArgumentParser, *, params: str | None = None,
              config: str | None = None, out: str | None = None, root: str | None = None,
              repo_root: bool = False, threads: bool | str = False,
              profile: str | None = None, readme: str | None = None) -> argparse.ArgumentParser:
    """Register the flags several commands share, each only when its keyword is given, so
    that a flag means the same in every command:

    * ``params``: ``--params`` (required), a JSON object, with this help;
    * ``config``: ``--config`` (required), a run config, with this help;
    * ``out``: ``--out`` (required), with this help;
    * ``root``: a data-folder option named ``root`` (e.g. ``"--root"``), default ``data``;
    * ``repo_root``: ``--root``, the repository root (default ``.``);
    * ``threads``: ``--threads`` (torch CPU threads; a string is its help);
    * ``profile``: ``--configfile`` (repeatable) merged over ``--base`` (default ``profile``),
      as ``snakemake --configfile`` does;
    * ``readme``: ``--readme``, the file whose generated block is written (default
      ``README.md``), with this help.
    """
    if params is not None:
        parser.add_argument("--params", required=True, help=params)
    if config is not None:
        parser.add_argument("--config", required=True, help=config)
    if out is not None:
        parser.add_argument("--out", required=True, help=out)
    if root is not None:
        parser.add_argument(root, default="data", help="data folder (config data.root)")
    if repo_root:
        parser.add_argument("--root", default=".", help="the repository root (default: .)")
    if threads:
        parser.add_argument("--threads", type=int, default=None,
                            help=threads if isinstance(threads, str) else "torch CPU threads")
    if profile is not None:
        parser.add_argument("--configfile", action="append", default=[], metavar="FILE",
                            help="config file(s) merged over --base, as snakemake --configfile")
        parser.add_argument("--base", default=profile,
                            help=f"the Snakefile's default config (default {profile}); "
                                 f"'none' for --configfile alone")
    if readme is not None:
        parser.add_argument("--readme", default="README.md", help=readme)
    return parser


def add_command(subparsers: argparse._SubParsersAction, name: str, help: str, *,
                description: str | None = None, func: Callable[..., int] | None = None,
                **flags: Any) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` (``func`` run for it, when given) with the shared flags
    ``flags`` names (the keywords of :func:`add_flags`): the one way commands register."""
    parser = subparsers.add_parser(name, help=help, description=description)
    add_flags(parser, **flags)
    if func is not None:
        parser.set_defaults(func=func)
    return parser


def add_action(sub: argparse._SubParsersAction, name: str, func: Callable[..., int], help: str,
               *, params: str | None = None, out: str | None = None, threads: bool = False,
               root: str | None = None) -> argparse.ArgumentParser:
    """Add one action with the options most actions share (:func:`add_command`)."""
    return add_command(sub, name, help, func=func, params=params, out=out, threads=threads,
                       root=root)


def run_each(command: str, noun: str, items: Mapping[str, Any],
             run: Callable[[str, Any], None],
             stop_on: tuple[type[BaseException], ...] = (KeyboardInterrupt,)) -> int:
    """Run ``run(name, item)`` for every item in turn (the ``*-many`` commands): progress and
    failures are printed under ``command``; an item that raises is named and the others still
    run, except for the exceptions of ``stop_on``. Exit code 1 when any failed, else 0."""
    failed = []
    for i, (name, item) in enumerate(items.items(), 1):
        print(f"{command}: {noun} {i}/{len(items)}: {name}", flush=True)
        try:
            run(name, item)
        except stop_on:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded in its folder, named, then go on
            print(f"{command}: {noun} {name} failed: {type(exc).__name__}: {exc}", flush=True)
            failed.append(name)
    if failed:
        print(f"{command}: {len(failed)} of {len(items)} {noun}s failed: {', '.join(failed)}",
              flush=True)
    return 1 if failed else 0
