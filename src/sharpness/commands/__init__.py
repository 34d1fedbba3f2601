"""Subcommands of ``sharpness``; each module defines ``register(subparsers)``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any


def add_action(sub: argparse._SubParsersAction, name: str, func: Callable[..., int], help: str,
               *, params: str | None = None, out: str | None = None, threads: bool = False,
               root: str | None = None) -> argparse.ArgumentParser:
    """Add one action with the options most actions share, each only when its help is given:
    ``--params`` (a JSON object), ``--out``, a data-root option (``root`` names the flag) and
    ``--threads`` (torch CPU threads)."""
    parser = sub.add_parser(name, help=help)
    if params is not None:
        parser.add_argument("--params", required=True, help=params)
    if out is not None:
        parser.add_argument("--out", required=True, help=out)
    if root is not None:
        parser.add_argument(root, default="data", help="data folder (config data.root)")
    if threads:
        parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.set_defaults(func=func)
    return parser


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
