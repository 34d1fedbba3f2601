"""``sharpness budget``: the measured time and memory per paper, from Snakemake benchmarks."""

from __future__ import annotations

import argparse

from sharpness.budget import collect, markdown
from sharpness.errors import SharpnessError
from sharpness.io import atomic_write_text


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``budget`` subcommand."""
    parser = subparsers.add_parser(
        "budget", help="summarise benchmarks/results/**/*.tsv per paper as a Markdown table")
    parser.add_argument("--root", default="benchmarks/results")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    budgets = collect(args.root)
    if not budgets:
        raise SharpnessError(f"no benchmark files under {args.root}: run the pipeline first")
    table = markdown(budgets)
    print(table, end="")
    if args.out:
        atomic_write_text(args.out, table)
    return 0
