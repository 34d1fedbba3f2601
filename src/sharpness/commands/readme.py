"""``sharpness readme``: write (or check) the generated blocks of the README and ``docs/``.

``sharpness readme refresh`` rewrites every block (``<!-- begin:NAME -->`` ...
``<!-- end:NAME -->``) of ``README.md``, ``CONTRIBUTING.md`` and ``docs/**.md`` from its
source (:mod:`sharpness.readme.sources`): computed blocks are recomputed, measured blocks are
copied from the committed measurement files under ``benchmarks/measured/``. ``--check``
writes nothing and exits 1 when a block is stale; ``sharpness readme list`` names every block,
where it is and what renews it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sharpness.commands import add_command
from sharpness.errors import SharpnessError
from sharpness.io import atomic_write_text


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``readme`` subcommand."""
    parser = add_command(
        subparsers, "readme", "write or check the generated blocks of README.md and docs/",
        description="Every number the README and docs/ state is in a generated block; this "
                    "rewrites them from their sources (computed, or the committed "
                    "measurements under benchmarks/measured/).", repo_root=True)
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    refresh = sub.add_parser("refresh", help="rewrite every generated block from its source")
    refresh.add_argument("--only", action="append", default=[], metavar="NAME",
                         help="only this block (repeat for several); default: all")
    refresh.add_argument("--check", action="store_true",
                         help="write nothing; exit 1 and name the stale blocks if any")
    refresh.set_defaults(func=_refresh)
    listing = sub.add_parser("list", help="every block: file, kind and the command that "
                                          "renews it")
    listing.set_defaults(func=_list)


def _located(root: Path) -> list[tuple[Path, str]]:
    from sharpness.readme.blocks import blocks_in, documents

    return [(doc, b.name) for doc in documents(root) for b in blocks_in(doc.read_text())]


def _list(args: argparse.Namespace) -> int:
    from sharpness.readme.sources import source

    root = Path(args.root)
    for doc, name in _located(root):
        s = source(name)
        kind = "measured" if s.measured else "computed"
        print(f"{doc.relative_to(root)}\t{name}\t{kind}\t{s.how}")
    return 0


def _refresh(args: argparse.Namespace) -> int:
    from sharpness.readme.blocks import blocks_in, documents, replace
    from sharpness.readme.sources import source

    root = Path(args.root)
    located = _located(root)
    unknown = sorted(set(args.only) - {name for _, name in located})
    if unknown:
        raise SharpnessError(f"--only {', '.join(unknown)}: no such block in README.md or "
                             "docs/ (see `sharpness readme list`)")
    rendered: dict[str, str] = {}
    stale = []
    # the profiles table reads the cost block: every other block is written first
    for last in (False, True):
        for doc in documents(root):
            text = doc.read_text()
            for block in blocks_in(text):
                name = block.name
                if (name == "profiles") != last or (args.only and name not in args.only):
                    continue
                if name not in rendered:
                    rendered[name] = source(name).render(root)
                new = replace(text, name, rendered[name])
                if new != text:
                    stale.append(f"{doc.relative_to(root)}: {name}")
                text = new
            if not args.check:
                atomic_write_text(doc, text)
    if args.check:
        for entry in stale:
            print(f"stale: {entry} (run `sharpness readme refresh`)")
        return 1 if stale else 0
    for entry in stale:
        print(f"updated {entry}")
    return 0
