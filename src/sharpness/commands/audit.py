"""``sharpness audit PATH``: print where a figure, table or run came from."""

from __future__ import annotations

import argparse

from sharpness.errors import SharpnessError
from sharpness.provenance import audit_lines, find_provenance


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``audit`` subcommand."""
    parser = subparsers.add_parser(
        "audit", help="print the provenance chain of a figure, table or run directory",
        description="Print, for a figure, table or run, the runs it came from with code "
                    "version, parameters, seeds, data checksums and device.")
    parser.add_argument("paths", nargs="+", help="figure/table file or run directory")
    parser.add_argument("--depth", type=int, default=6, help="how deep to follow inputs")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the chain for every path; fail if one has no provenance."""
    for path in args.paths:
        if find_provenance(path) is None:
            raise SharpnessError(f"no provenance found for {path} (expected "
                                 f"{path}'s sidecar <stem>.provenance.json or a provenance.json "
                                 "in its run directory); was it made by the pipeline?")
        print("\n".join(audit_lines(path, max_depth=args.depth)))
    return 0
