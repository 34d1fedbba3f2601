"""``sharpness build [SNAKEMAKE ARGUMENTS...]``: ``snakemake`` with the command-line slips
caught first.

Snakemake reads its ``--configfile`` files before any code of this workflow runs, so a target
written after ``--configfile`` (``snakemake --configfile my.yaml figures/eos/fig_phase.pdf``)
ends in a ``FileNotFoundError`` or, once the PDF exists, a ``UnicodeDecodeError`` traceback
from reading a PDF as YAML. This command looks at the words first: a misplaced target stops
with the command in the right order; a run from a subfolder says where to run from; every
config file is read as plain data and checked with every problem named
(``sharpness config check``). Then it hands over to ``snakemake`` with the same words, where
the Snakefile checks the targets (the nearest valid names for a typo).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from sharpness.commands import add_command
from sharpness.config.targets import TargetError, refuse_misplaced, repository_root


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``build`` subcommand."""
    parser = add_command(
        subparsers, "build", "snakemake with its arguments checked first (target order, "
                             "working folder, config files)",
        description="Run `snakemake ARGS` after checking that no target follows --configfile, "
                    "--forcerun or -R, that it runs from the repository root, and that every "
                    "config file is valid plain data.")
    parser.add_argument("words", nargs=argparse.REMAINDER, metavar="SNAKEMAKE_ARGS",
                        help="what you would give snakemake (targets first)")
    parser.set_defaults(func=_build)


def config_files(words: list[str]) -> list[str]:
    """The files given to ``--configfile`` (every word after it up to the next option)."""
    found, taking = [], False
    for word in words:
        if word.startswith("-"):
            name, _, value = word.partition("=")
            taking = name in ("--configfile", "--configfiles")
            if taking and value:
                found.append(value)
            continue
        if taking:
            found.append(word)
    return found


def _build(args: argparse.Namespace) -> int:
    words = list(args.words)
    refuse_misplaced(words)
    root = repository_root()
    if root is None:
        raise TargetError("no Snakefile here or above: run from the repository root")
    if root != Path.cwd().resolve():
        raise TargetError("Snakemake reads the Snakefile, the profile and every target "
                          "relative to the repository root")
    files = config_files(words)
    if files:
        from sharpness.commands.config import run_check  # lazy: loads the schema

        checked = argparse.Namespace(files=files, base="workflow/config/quick.yaml",
                                     schema="workflow/config/config.schema.yaml", plain=False)
        if run_check(checked):
            return 2
    here = Path(sys.executable).parent / "snakemake"
    program = str(here) if here.is_file() else shutil.which("snakemake")
    if program is None:
        raise TargetError("snakemake is not installed in this environment: run `make` first")
    os.execv(program, [program, *words])
    return 0  # not reached: execv replaces this process
