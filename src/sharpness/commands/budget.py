"""``sharpness budget``: the measured time and memory per paper (benchmark files plus
``/usr/bin/time -v`` reports), as a Markdown table for the README."""

from __future__ import annotations

import argparse
from pathlib import Path

from sharpness.commands import add_command
from sharpness.cost.budget import (
    collect,
    collect_parts,
    markdown,
    parse_time_v,
    parts_markdown,
    read_parts,
    replace_block,
)
from sharpness.errors import SharpnessError
from sharpness.io import atomic_write_text


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``budget`` subcommand."""
    parser = add_command(
        subparsers, "budget", "summarise benchmarks/results/**/*.tsv (and /usr/bin/time -v "
        "reports) per paper as a Markdown table")
    parser.add_argument("--root", default="benchmarks/results",
                        help="folder of the rules' benchmark files (default: benchmarks/results)")
    parser.add_argument("--timing", action="append", default=[], metavar="PAPER=FILE",
                        help="a `/usr/bin/time -v -o FILE snakemake PAPER_all` report; repeat "
                             "per paper")
    parser.add_argument("--preamble", default="",
                        help="text put above the table (machine, date, commit)")
    parser.add_argument("--parts", default=None, metavar="YAML",
                        help="also a table of where the summed job time goes, by the named "
                             "groups of jobs in this file (benchmarks/quick_parts.yaml)")
    parser.add_argument("--cores", type=int, default=2,
                        help="cores the timed run had (for the cores-busy line of --parts)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    parser.add_argument("--readme", default=None,
                        help="replace the table between the budget markers in this file")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    budgets = collect(args.root)
    if not budgets:
        raise SharpnessError(f"no benchmark files under {args.root}: run the pipeline first")
    timings = {}
    for entry in args.timing:
        paper, sep, path = entry.partition("=")
        if not sep or not paper or not path:
            raise SharpnessError(f"--timing {entry!r}: expected PAPER=FILE")
        if not Path(path).is_file():
            raise SharpnessError(f"--timing {entry!r}: no such file {path}")
        timings[paper] = parse_time_v(path)
    table = markdown(budgets, timings)
    if args.parts:
        parts = collect_parts(args.root, read_parts(args.parts))
        table += ("\nWhere the summed job time goes (groups of "
                  f"`{_shown(Path(args.parts))}`):\n\n" + parts_markdown(parts, timings.get("all"), cores=args.cores))
    text = (args.preamble.rstrip() + "\n\n" if args.preamble else "") + table
    print(text, end="")
    if args.out:
        atomic_write_text(args.out, text)
    if args.readme:
        readme = Path(args.readme)
        atomic_write_text(readme, replace_block(readme.read_text(), text))
    return 0


def _shown(path: Path) -> str:
    """``path`` as the measurement file names it: relative to the current folder, else its
    folder and name (a measuring clone's absolute path says nothing to a reader)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return f"{path.parent.name}/{path.name}"
