"""Subcommands of ``sharpness``; each module defines ``register(subparsers)``."""

from __future__ import annotations

import argparse
from collections.abc import Callable


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
