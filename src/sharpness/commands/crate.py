"""``sharpness crate``: pack a finished build as a Workflow Run RO-Crate (a zip).

The crate holds the workflow, the figures, tables and claims ledger with their SHA-256, each
job's provenance record, the registration and the claims, described as the Provenance Run
Crate profile asks, all read from the build's records (:mod:`sharpness.crate.build`). The
workflow's last rule runs it; ``sharpness audit --crate ZIP FIGURE`` checks a figure against
a crate; ``docs/audit.md`` says how to deposit one.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sharpness.commands import add_command
from sharpness.errors import SharpnessError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``crate`` subcommand."""
    parser = add_command(
        subparsers, "crate", "pack a finished build as a Workflow Run RO-Crate zip",
        description="Write the build in --root (the folder holding its Snakefile, figures/ "
                    "and results/) as an RO-Crate zip: the Snakefile as the Workflow "
                    "RO-Crate main entity with its rules, configs and pinned environment; "
                    "every job (each provenance record under figures/ and results/) as an "
                    "action with its command, start, end, status, inputs and outputs; the "
                    "figures, tables, CLAIMS.md and the registration with their SHA-256; "
                    "each claim pointing to the files its verdict reads. A file that no "
                    "longer has the hash its record holds stops it, named.",
        func=_run, repo_root=True)
    parser.add_argument("--out", default="results/build.crate.zip",
                        help="the zip to write (default: results/build.crate.zip)")
    parser.add_argument("--max-file-mb", type=float, default=2.0, metavar="MB",
                        help="a run's output file larger than this (a checkpoint) is named "
                             "with its SHA-256 but not copied (default 2); figures, tables, "
                             "the ledger and every record are always copied")
    parser.add_argument("--agent", default=None, metavar="NAME",
                        help="who ran the build: each action's agent and the crate's author "
                             "(default: git's user.name in --root; without one, an explicit "
                             "'unknown agent')")
    parser.add_argument("--agent-id", default=None, metavar="URI",
                        help="the agent's id: an ORCID or other web address (default: a "
                             "'#agent-NAME' of the crate)")


def _run(args: argparse.Namespace) -> int:
    from sharpness.crate.build import write_crate

    if not args.max_file_mb >= 0:
        raise SharpnessError(f"--max-file-mb {args.max_file_mb}: must be 0 or more")
    out = write_crate(Path(args.root), args.out, max_bytes=int(args.max_file_mb * 2**20),
                      agent=args.agent, agent_id=args.agent_id)
    print(f"{out}: RO-Crate of the build in {args.root} ({out.stat().st_size} bytes); check a "
          f"figure with `sharpness audit --crate {out} FIGURE`")
    return 0
