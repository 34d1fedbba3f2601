"""Where an audited path is, wherever ``sharpness audit`` runs.

Records name their inputs relative to the repository root (``results/...``), so an audit
started in ``figures/`` used to find none of them and printed a chain that stopped, with exit
code 0. :func:`locate` resolves each path the user gives (from the current folder, else from
the repository root), names a missing one as such, and identifies a figure or table copied
out of the tree by the provenance id stamped into its metadata: the record with that id is
found under ``figures/`` (or a variant's, ``variants/<name>/figures/``) and the copy's SHA-256
is checked against it. A path inside a variant (:mod:`sharpness.config.variant`) is audited
from that variant's folder, where its records name their inputs from.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from sharpness.config.variant import FOLDER as VARIANTS
from sharpness.errors import SharpnessError
from sharpness.runs.audit_checks import read_stamp
from sharpness.runs.provenance import SIDECAR_SUFFIX, file_sha256, find_provenance

#: the folders a stamped copy's record is looked for in (sidecars sit beside their files)
RECORD_FOLDERS = ("figures",)


@dataclass
class Located:
    """A path to audit, as the audit should see it from the repository root: ``path`` (the
    file or folder whose record is read), ``notes`` (lines printed before its chain) and
    ``problems`` (failed checks found while locating it)."""

    path: str
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: the folder the audit runs in: the repository root, or the variant's folder
    root: Path | None = None


def build_home(path: Path, root: Path) -> Path:
    """The build ``path`` belongs to: ``root/variants/<name>`` for a path inside a variant,
    else ``root``."""
    try:
        parts = path.resolve().relative_to(root.resolve()).parts
    except ValueError:
        return root
    return root / VARIANTS / parts[1] if len(parts) > 2 and parts[0] == VARIANTS else root


def _located(path: Path, root: Path) -> Located:
    home = build_home(path, root)
    return Located(_relative(path, home), root=home)


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it (the form records use), else absolute."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def find_stamped(stamp: str, root: Path) -> Path | None:
    """The sidecar record under :data:`RECORD_FOLDERS` of ``root`` or of one of its variants
    whose id is ``stamp``."""
    homes = [root, *sorted(p for p in (root / VARIANTS).glob("*") if p.is_dir())]
    for folder in (home / f for home in homes for f in RECORD_FOLDERS):
        for sidecar in sorted(folder.rglob(f"*{SIDECAR_SUFFIX}")):
            try:
                if json.loads(sidecar.read_text()).get("id") == stamp:
                    return sidecar
            except (OSError, ValueError):
                continue
    return None


def _loose_copy(copy: Path, root: Path) -> Located | None:
    """The in-tree artifact a stamped copy came from, with the copy's hash checked against
    that artifact's record; None when ``copy`` carries no stamp."""
    stamp = read_stamp(copy) if copy.is_file() else None
    if stamp is None:
        return None
    sidecar = find_stamped(stamp, root)
    if sidecar is None:
        return Located(str(copy), problems=[
            f"UNKNOWN STAMP: {copy} carries provenance id {stamp}, but no record under "
            f"{', '.join(f + '/' for f in RECORD_FOLDERS)} of {root} has it (built elsewhere, "
            "or its build was removed)"])
    record = json.loads(sidecar.read_text())
    stem = sidecar.name[:-len(SIDECAR_SUFFIX)]
    original = sidecar.with_name(stem + copy.suffix)
    want = next((sha for name, sha in (record.get("output_sha256") or {}).items()
                 if Path(name).name == original.name), None)
    found = _located(original, root)
    found.notes.append(f"{copy}: a copy outside the build, identified by its stamp {stamp} "
                       f"as {_relative(original, root)}")
    if want is None:
        found.problems.append(f"COPY UNCHECKED: the record of {original.name} holds no "
                              f"SHA-256 to check {copy} against")
    elif file_sha256(copy) != want:
        found.problems.append(f"COPY CHANGED: {copy} carries the stamp {stamp} but not the "
                              f"content its record hashed ({want[:12]}): edited after the build")
    else:
        found.notes.append(f"{copy}: its SHA-256 is the one its record holds ({want[:12]})")
    return found


def locate(given: str, root: Path, cwd: Path | None = None) -> Located:
    """``given`` (as typed, relative to ``cwd``) resolved for an audit run from ``root``: the
    path itself when it has a record, the in-tree original of a stamped copy, else a
    :class:`SharpnessError` that says "no such file" or "no provenance"."""
    cwd = Path.cwd() if cwd is None else cwd
    candidates = [cwd / given, root / given] if not os.path.isabs(given) else [Path(given)]
    # a file that is gone but whose record is still there is audited (it reports ORPHANED)
    path = next((c.resolve() for c in candidates
                 if c.exists() or find_provenance(c) is not None), None)
    if path is None:
        raise SharpnessError(f"{given}: no such file or folder (looked in {cwd} and in the "
                             f"repository root {root})")
    if find_provenance(path) is not None:
        return _located(path, root)
    copy = _loose_copy(path, root)
    if copy is not None:
        return copy
    raise SharpnessError(f"no provenance found for {given} (expected its sidecar "
                         f"<stem>{SIDECAR_SUFFIX}, a provenance.json in its run folder, or a "
                         "provenance stamp in its metadata); was it made by the pipeline?")
