"""``sharpness audit PATH``: print where a figure, table or run came from;
``sharpness diff A B``: why two versions of an artifact differ.

Both run from any folder: each path is resolved from the current folder (else from the
repository root) and the chain is read from the root, where records name their inputs
(:mod:`sharpness.runs.audit_locate`); a copy of a figure found outside the tree is matched to
its record by the provenance id stamped into it."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from sharpness.commands import add_command
from sharpness.config.targets import repository_root
from sharpness.config.variant import FOLDER as VARIANTS
from sharpness.config.variant import NAME
from sharpness.config.variant import describe as describe_variant
from sharpness.errors import SharpnessError
from sharpness.runs import audit as chain  # the provenance chain's audit
from sharpness.runs.audit_locate import Located, locate
from sharpness.runs.csv_compare import csv_lines


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
        "diff", help="why two versions of a figure, table or run differ (a variant's too)",
        description="Compare two provenance records part by part: kind, params, seed, code "
                    "(commit, dirty state, changed source files), packages, data checksums "
                    "and inputs; for a figure or table also its numbers (its CSVs). With "
                    "--variant NAME, b is the same file in the variant's build "
                    "(variants/NAME/...): the default build against your own settings. "
                    "Exit code 0 when the ids agree, 1 when they differ.",
        epilog="example: sharpness diff figures/minorfirst/l1_maxmargin.pdf --variant my-952061 "
               "--out compare.png")
    diff.add_argument("a", help="figure/table file, sidecar or run directory")
    diff.add_argument("b", nargs="?", default=None,
                      help="the other version (omit with --variant)")
    diff.add_argument("--variant", metavar="NAME", default=None,
                      help="compare a with the same path in variants/NAME/ (`ls variants/`)")
    diff.add_argument("--out", metavar="PNG", default=None,
                      help="also write both figures side by side to this PNG")
    diff.add_argument("--json", action="store_true", help="the differences as JSON")
    diff.set_defaults(func=run_diff)


@contextlib.contextmanager
def _at_root(root: Path) -> Iterator[None]:
    """Run the block in ``root`` (records name their inputs from there), then go back."""
    here = Path.cwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(here)


def _folders(paths: list[str], root: Path) -> list[str]:
    """``--scan`` folders, each from the current folder or else the repository root."""
    out = []
    for given in paths:
        found = next((c.resolve() for c in (Path.cwd() / given, root / given) if c.is_dir()),
                     None)
        if found is None:
            raise SharpnessError(f"--scan takes folders; no such folder: {given}")
        out.append(str(found))
    return out


def run(args: argparse.Namespace) -> int:
    """Print the chain (or the settings) for every path; fail if one has no provenance;
    exit 1 when a check on the disk fails (the failures are listed again at the end)."""
    root = repository_root() or Path.cwd().resolve()
    if args.crate:
        from sharpness.crate.check import audit_crate

        lines, found = audit_crate(args.crate, args.paths)
        print("\n".join(lines))
        return _verdict(found)
    if args.scan:
        folders = _folders(args.paths, root)
        with _at_root(root):
            lines, found = chain.scan_lines(folders)
        print("\n".join(lines))
        return _verdict(found)
    located = [locate(p, root) for p in args.paths]
    return _report(args, located, root)


def _report(args: argparse.Namespace, located: list[Located], root: Path) -> int:
    """Each path's chain, read in the folder its build lives in (the repository root, or a
    variant's folder: its records name their inputs from there)."""
    if args.settings:
        texts = []
        for spot in located:
            with _at_root(spot.root or root):
                texts.append(chain.settings_yaml(spot.path))
        print("\n".join(texts), end="")
        return 0
    if args.json:
        trees = []
        for spot in located:
            with _at_root(spot.root or root):
                tree = chain.audit_tree(spot.path, max_depth=args.depth)
            tree["problems"] = [*spot.problems, *tree.get("problems", [])]
            trees.append(tree)
        print(json.dumps(trees if len(trees) > 1 else trees[0], indent=2, sort_keys=True))
        return 1 if any(_failed(t) for t in trees) else 0
    found: list[str] = []
    for spot in located:
        with _at_root(spot.root or root):
            lines, problems = chain.audit_report(spot.path, max_depth=args.depth)
        build = (spot.root or root)
        where = ([f"(in {build.relative_to(root).as_posix()}/: a variant's build)"]
                 if build != root else [])
        print("\n".join([*spot.notes, *where, *(f"!!! {p}" for p in spot.problems), *lines]))
        found += spot.problems + problems
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


def _other(args: argparse.Namespace, root: Path) -> str:
    """The path ``b`` of a diff: given, or ``a`` in the variant's build."""
    if args.variant is None:
        if args.b is None:
            raise SharpnessError("diff needs two paths, or one and --variant NAME")
        return str(args.b)
    if args.b is not None:
        raise SharpnessError("diff takes one path with --variant NAME (the other is the same "
                             "file in variants/NAME/)")
    home = root / VARIANTS / args.variant
    if not NAME.match(args.variant) or not home.is_dir():
        known = sorted(p.name for p in (root / VARIANTS).glob("*") if p.is_dir())
        raise SharpnessError(f"--variant {args.variant}: no such variant under {VARIANTS}/ "
                             f"(built ones: {', '.join(known) or 'none yet'})")
    spot = locate(args.a, root)
    if spot.root not in (None, root):
        raise SharpnessError(f"{args.a}: already a variant's file; give the default build's "
                             "path with --variant")
    return (Path(VARIANTS) / args.variant / spot.path).as_posix()


def run_diff(args: argparse.Namespace) -> int:
    """Print what differs between two records (and, for figures and tables, their numbers);
    exit 1 when their ids differ."""
    root = repository_root() or Path.cwd().resolve()
    other = _other(args, root)
    located = [locate(args.a, root), locate(other, root, cwd=root if args.variant else None)]
    records = []
    for spot in located:
        with _at_root(spot.root or root):
            records.append(chain.load_record(spot.path)[1])  # type: ignore[index]
    diff = chain.diff_records(*records)
    files = [(spot.root or root) / spot.path for spot in located]
    if args.json:
        print(json.dumps(diff, indent=2, sort_keys=True, default=str))
    else:
        lines = chain.diff_lines(diff, args.a, other)
        if all(f.is_file() for f in files):
            lines += csv_lines(*(f.with_suffix(".csv") for f in files))
        for record, name in zip(records, ("a", "b"), strict=True):
            if isinstance(record.get("variant"), dict):
                lines.append(f"{name} is {describe_variant(record['variant'], shown=8)}")
        print("\n".join(lines))
    if args.out:
        pngs = [f.with_suffix(".png") for f in files]
        if not all(p.is_file() for p in pngs):
            raise SharpnessError(f"--out: no PNG beside {' or '.join(map(str, files))} to show")
        from sharpness.runs.side_by_side import side_by_side

        side_by_side(*pngs, args.out, titles=(f"a: {args.a}", f"b: {other}"))
        print(f"wrote {args.out}: a on the left, b on the right")
    return 0 if diff["same_id"] else 1
