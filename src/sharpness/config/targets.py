"""Command-line mistakes caught before Snakemake turns them into a traceback.

:func:`check_targets` is what the Snakefile calls once every rule is defined: a target that
names no figure or table of the profile (``figures/minorfirst/l1_maxmargn.pdf``) or no rule
(``eos_al``) would end in Snakemake's ``MissingRuleException`` with no hint; here it stops
with the nearest valid names instead.

:func:`misplaced_targets` finds the other common slip, a target written after
``--configfile`` (which takes every word after it, so Snakemake would read a PDF as YAML).
Snakemake loads its config files before it reads the Snakefile, so only a command that runs
first can catch that one: ``sharpness config check`` does (given the whole command line), and
the README's troubleshooting table names Snakemake's own error for it.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sharpness.errors import SharpnessError


class TargetError(SharpnessError):
    """A target no rule makes, or a command line Snakemake would misread; the message gives
    the nearest valid names or the right order. (Defined here, not in ``sharpness.errors``:
    that module is part of the code a claims registration fingerprints.)"""


#: a word that is a figure or table target rather than a config file
TARGET_FILE = re.compile(r"^(?:figures|results)/.+\.(?:pdf|png|md|csv|tex|json|txt)$")
#: options that take every word after them (Snakemake's nargs="+")
GREEDY = ("--configfile", "--configfiles", "--forcerun", "-R", "--until", "-U", "--omit-from",
          "-O", "--allowed-rules")


def stem(target: str) -> str:
    """``figures/eos/fig_phase`` for any file of that item (``.pdf``, ``.caption.txt``, ...)."""
    head, _, name = target.rpartition("/")
    return f"{head}/{name.split('.', 1)[0]}" if head else name.split(".", 1)[0]


def nearest(word: str, names: Iterable[str], n: int = 2) -> list[str]:
    """Up to ``n`` names nearest ``word`` (difflib's ratio at least 0.5), nearest first."""
    return difflib.get_close_matches(word, sorted(set(names)), n=n, cutoff=0.5)


def misplaced_targets(argv: Sequence[str]) -> list[str]:
    """Words of ``argv`` that look like figure or table targets but follow a greedy option
    (``--configfile``, ``--forcerun``, ``-R``, ...), which would swallow them."""
    found, greedy = [], False
    for word in argv:
        if word.startswith("-"):
            greedy = word.split("=", 1)[0] in GREEDY
            continue
        if greedy and TARGET_FILE.match(word):
            found.append(word)
    return found


def reordered(argv: Sequence[str]) -> str:
    """``argv`` with the misplaced targets moved to the front: the command to run instead."""
    moved = misplaced_targets(argv)
    rest = [w for w in argv if w not in moved]
    return shlex.join(["snakemake", *moved, *rest])


def refuse_misplaced(argv: Sequence[str]) -> None:
    """Raise :class:`TargetError` showing the right order when a target follows a greedy
    option."""
    moved = misplaced_targets(argv)
    if moved:
        raise TargetError(
            f"{', '.join(moved)} is written after an option that takes every word after it "
            f"(--configfile, --forcerun, -R), so Snakemake would read it as a config file or "
            f"rule, not as a target. Put targets first:\n\n    {reordered(argv)}\n")


@functools.cache
def _snakemake_parser() -> Any:
    """Snakemake's own argument parser, built once (about a CPU-second)."""
    from snakemake.cli import get_argument_parser  # lazy: the Snakefile and the screen only

    return get_argument_parser()


def positional_targets(argv: Sequence[str]) -> list[str]:
    """The targets of a ``snakemake`` command line, read with Snakemake's own parser (so
    every option's arity is Snakemake's); empty when it cannot parse them."""
    try:
        args, _ = _snakemake_parser().parse_known_args(list(argv))
    except (SystemExit, Exception):  # noqa: BLE001 - a line it cannot parse is Snakemake's to refuse
        return []
    return [str(t) for t in (getattr(args, "targets", None) or [])]


def check_targets(targets: Sequence[str], items: Iterable[str], rules: Iterable[str],
                  root: str | Path = ".") -> None:
    """Raise :class:`TargetError` for a target that names no item of ``items`` (the
    profile's figures and tables), no rule of ``rules`` and no existing file, listing the
    nearest valid names. Targets outside ``figures/`` with a folder (intermediate files under
    ``results/``) are Snakemake's to resolve."""
    items = [str(i) for i in items]
    stems = {stem(i) for i in items} | {"figures/claims", "figures/CLAIMS"}
    rules = set(rules)
    bad = []
    for target in targets:
        if target in rules or (Path(root) / target).exists():
            continue
        if target.startswith("figures/") and stem(target) not in stems:
            bad.append((target, [f"{s}.pdf" if f"{s}.pdf" in items else
                                 next((i for i in items if stem(i) == s), s)
                                 for s in nearest(stem(target), stems)]))
        elif "/" not in target and "." not in target:
            ids = {stem(i).rsplit("/", 1)[1]: i for i in items}
            close = nearest(target, [*rules, *ids])
            bad.append((target, [ids.get(c, c) for c in close]))
    if bad:
        lines = [f"  {t}: no figure, table or rule of that name in this profile"
                 + (f"; did you mean {' or '.join(c)}?" if c else "") for t, c in bad]
        papers = sorted({i.split("/")[1] for i in items if i.count("/") == 2})
        raise TargetError("unknown target(s):\n" + "\n".join(lines) + "\n  Targets are "
                          "figures/<paper>/<id>.pdf (figures), .md (tables), a paper's "
                          f"{', '.join(p + '_all' for p in papers)}, or all; "
                          "`snakemake --list-target-rules` and docs/outputs.md list them.")


def from_snakefile(argv: Sequence[str], items: Iterable[str], rules: Iterable[str]) -> None:
    """:func:`check_targets` on the targets of this ``snakemake`` command line; nothing when
    the workflow was started another way (an API call, a job of a cluster executor)."""
    if not argv or os.path.basename(argv[0]) != "snakemake":
        return
    check_targets(positional_targets(argv[1:]), items, rules)


def repository_root(start: str | Path = ".") -> Path | None:
    """The nearest folder at or above ``start`` holding this workflow (a ``Snakefile`` and
    ``workflow/config/quick.yaml``), or None outside one."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / "Snakefile").is_file() and (folder / "workflow/config/quick.yaml").is_file():
            return folder
    return None


def subfolder_hint(start: str | Path = ".") -> str:
    """A line saying where to run from when ``start`` is a subfolder of the repository (its
    paths are relative to the root: ``workflow/config/quick.yaml``, ``figures/...``); empty
    at the root or outside one."""
    root = repository_root(start)
    here = Path(start).resolve()
    if root is None or root == here or here.parent == root / "variants":
        return ""  # a variant's build folder is where its jobs run (sharpness.config.variant)
    return (f"you are in {here.relative_to(root)}/ of the repository: run from the "
            f"repository root (cd {root})")
