"""``sharpness locks``: the run folders being written now, by which process.

Lists every run-folder lock (``sharpness.runs.lock``) under the given folders whose file names a
holder: held by a live process (its job is running: wait for it before ``--rerun-incomplete``
or ``--unlock``), or left by one that ended without releasing it (killed; the next writer
takes it over). Snakemake's ``IncompleteFilesException`` and ``LockException`` messages end
with the same list (``sharpness.runs.lockinfo``). Reads only; exit 0.
"""

from __future__ import annotations

import argparse

from sharpness.runs.lockinfo import held_folders


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``locks`` subcommand."""
    parser = subparsers.add_parser(
        "locks", help="list the run folders being written now and the process writing each "
                      "(what to wait for before --rerun-incomplete)")
    parser.add_argument("roots", nargs="*", default=["results", "data"],
                        help="folders searched for run-folder locks (default: results data)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    held = held_folders(args.roots)
    for entry in held:
        print(entry.line())
    if not held:
        print(f"no run folder under {', '.join(args.roots)} is being written now")
    return 0
