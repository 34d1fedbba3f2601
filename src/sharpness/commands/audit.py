"""``sharpness audit PATH``: print where a figure, table or run came from;
``sharpness diff A B``: why two versions of an artifact differ."""

from __future__ import annotations

import argparse
import json
import os
import sys

from sharpness.commands import add_command
from sharpness.errors import SharpnessError
from sharpness.runs import audit as chain  # the provenance chain's audit
from sharpness.runs.provenance import find_provenance


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``audit`` and ``diff`` subcommands."""
    parser = add_command(
        subparsers, "audit", "print the provenance chain of a figure, table or run directory",
        description="Print, for a figure, table or run, the runs it came from with code "
                    "version (a dirty tree flagged loudly), parameters (those shared by the "
                    "inputs once, then what differs per input), seeds, data checksums and "
                    "device; and check every record against the disk: its id recomputed "
                    "from its content (a setting or status edited after it was written), "
                    "the file's own provenance stamp and SHA-256 against its record, inputs "
                    "still present with their recorded content, records whose output is gone "
                    "(orphaned), runs left 'running' whose process is gone (interrupted), "
                    "whose loop makes no progress (stalled) or that carry no possible "
                    "heartbeat (unknown). Each failed check is a '!!!' line. Exit code 0 when "
                    "every check passes, 1 when one fails.")
    parser.add_argument("paths", nargs="+",
                        help="figure/table file or run directory (folders with --scan)")
    parser.add_argument("--depth", type=int, default=6, help="how deep to follow inputs")
    parser.add_argument("--json", action="store_true", help="the chain as JSON")
    parser.add_argument("--scan", action="store_true",
                        help="treat the paths as folders and check every record under them, "
                             "one line each (edited records, orphaned records, replaced "
                             "files, changed inputs, interrupted, stalled or unknown runs)")
    parser.add_argument("--crate", metavar="ZIP", default=None,
                        help="check each figure or table against this build crate (`sharpness "
                             "crate`) alone: hashes, stamp, records, commit, registration")
    parser.add_argument("--settings", action="store_true",
                        help="print only the resolved settings each path's record used "
                             "(its params and seed), as YAML")
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
    """Print the chain (or the settings) for every path; fail if one has no provenance;
    exit 1 when a check on the disk fails (the failures are listed again at the end)."""
    if args.crate:
        from sharpness.crate.check import audit_crate

        lines, found = audit_crate(args.crate, args.paths)
        print("\n".join(lines))
        return _verdict(found)
    if args.scan:
        missing = [p for p in args.paths if not os.path.isdir(p)]
        if missing:
            raise SharpnessError(f"--scan takes folders; not a folder: {', '.join(missing)}")
        lines, found = chain.scan_lines(args.paths)
        print("\n".join(lines))
        return _verdict(found)
    for path in args.paths:
        _need(path)
    if args.settings:
        print("\n".join(chain.settings_yaml(p) for p in args.paths), end="")
        return 0
    if args.json:
        trees = [chain.audit_tree(p, max_depth=args.depth) for p in args.paths]
        print(json.dumps(trees if len(trees) > 1 else trees[0], indent=2, sort_keys=True))
        return 1 if any(_failed(t) for t in trees) else 0
    found: list[str] = []
    for path in args.paths:
        lines, problems = chain.audit_report(path, max_depth=args.depth)
        print("\n".join(lines))
        found += problems
    return _verdict(found)


def _verdict(found: list[str]) -> int:
    """Exit code 1 and the failed checks again on stderr when any failed, else 0."""
    if found:
        print(f"\n{len(found)} check(s) failed:", *(f"  {p}" for p in found), sep="\n",
              file=sys.stderr)
        return 1
    return 0


def _failed(tree: dict) -> bool:
    return bool(tree.get("problems")) or any(_failed(c) for c in tree.get("inputs", []))


def run_diff(args: argparse.Namespace) -> int:
    """Print what differs between two records; exit 1 when their ids differ."""
    records = []
    for path in (args.a, args.b):
        _need(path)
        records.append(chain.load_record(path)[1])  # type: ignore[index]
    diff = chain.diff_records(*records)
    if args.json:
        print(json.dumps(diff, indent=2, sort_keys=True, default=str))
    else:
        print("\n".join(chain.diff_lines(diff, args.a, args.b)))
    return 0 if diff["same_id"] else 1
