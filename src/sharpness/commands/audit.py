"""``sharpness audit PATH``: print where a figure, table or run came from;
``sharpness diff A B``: why two versions of an artifact differ."""

from __future__ import annotations

import argparse
import json

from sharpness.errors import SharpnessError
from sharpness.provenance import find_provenance


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``audit`` and ``diff`` subcommands."""
    parser = subparsers.add_parser(
        "audit", help="print the provenance chain of a figure, table or run directory",
        description="Print, for a figure, table or run, the runs it came from with code "
                    "version (a dirty tree flagged loudly), parameters (those shared by the "
                    "inputs once, then what differs per input), seeds, data checksums and "
                    "device.")
    parser.add_argument("paths", nargs="+", help="figure/table file or run directory")
    parser.add_argument("--depth", type=int, default=6, help="how deep to follow inputs")
    parser.add_argument("--json", action="store_true", help="the chain as JSON")
    parser.set_defaults(func=run)
    diff = subparsers.add_parser(
        "diff", help="why two versions of a figure, table or run differ",
        description="Compare two provenance records part by part: kind, params, seed, code "
                    "(commit, dirty state, changed source files), packages, data checksums "
                    "and inputs. Exit code 0 when the ids agree, 1 when they differ.")
    diff.add_argument("a", help="figure/table file, sidecar or run directory")
    diff.add_argument("b", help="the other version")
    diff.add_argument("--json", action="store_true", help="the differences as JSON")
    diff.set_defaults(func=run_diff)


def _need(path: str) -> None:
    if find_provenance(path) is None:
        raise SharpnessError(f"no provenance found for {path} (expected "
                             f"{path}'s sidecar <stem>.provenance.json or a provenance.json "
                             "in its run directory); was it made by the pipeline?")


def run(args: argparse.Namespace) -> int:
    """Print the chain for every path; fail if one has no provenance."""
    from sharpness.audit import audit_lines, audit_tree

    for path in args.paths:
        _need(path)
    if args.json:
        trees = [audit_tree(p, max_depth=args.depth) for p in args.paths]
        print(json.dumps(trees if len(trees) > 1 else trees[0], indent=2, sort_keys=True))
        return 0
    for path in args.paths:
        print("\n".join(audit_lines(path, max_depth=args.depth)))
    return 0


def run_diff(args: argparse.Namespace) -> int:
    """Print what differs between two records; exit 1 when their ids differ."""
    from sharpness.audit import diff_lines, diff_records, load_record

    records = []
    for path in (args.a, args.b):
        _need(path)
        records.append(load_record(path)[1])  # type: ignore[index]
    diff = diff_records(*records)
    if args.json:
        print(json.dumps(diff, indent=2, sort_keys=True, default=str))
    else:
        print("\n".join(diff_lines(diff, args.a, args.b)))
    return 0 if diff["same_id"] else 1
