"""What ``sharpness audit`` checks on disk, beyond reading a record: that the files a record
names are the files it was written for, that its inputs are still what they were, and that a
run shown as ``running`` has a live owner.

* **Outputs** (figures, tables, evaluations, the ledger): each file the record lists must exist
  beside it (else the record is *orphaned*: its job failed or the file was removed), have the
  SHA-256 the record holds, and (figures and tables) carry the record's id in its own metadata
  stamp (PDF keywords, PNG text, a comment in Markdown and LaTeX); an older copy put in place of
  the current file is caught by either.
* **Inputs**: each input still exists and its content (a file's SHA-256, a folder's
  :func:`sharpness.provenance.folder_digest`) is the one recorded.
* **Liveness**: a run record still saying ``running`` is ``interrupted`` when its owner is gone:
  its ``pid`` no longer lives on this host, or its ``heartbeat`` is stale (see
  :func:`owner_state` for the fields read).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sharpness.provenance import content_sha256, file_sha256
from sharpness.runstate import run_state

#: The stamp :mod:`sharpness.plots.save` writes into every figure and table file.
STAMP = re.compile(rb"sharpness-provenance:([0-9a-f]{16})")
STAMPED_KINDS = ("figure", "table")
STAMPED_SUFFIXES = (".pdf", ".png", ".md", ".tex")


def read_stamp(path: str | os.PathLike[str]) -> str | None:
    """The provenance id stamped into a figure or table file, or ``None`` when it has none."""
    match = STAMP.search(Path(path).read_bytes())
    return match.group(1).decode() if match else None


def output_problems(prov: Path, record: Mapping[str, Any]) -> list[str]:
    """Problems with the files a figure/table/evaluation record describes (none for a run).

    Outputs are looked up beside the record (sidecars sit next to their files), so a figure
    folder moved or copied elsewhere audits the same."""
    if "artifact" not in record:
        return []
    problems = []
    hashes = record.get("output_sha256") or {}
    for name in record.get("outputs") or [record["artifact"]]:
        path = prov.parent / Path(name).name
        if not path.is_file():
            problems.append(f"ORPHANED: {path} is gone; this record vouches for nothing "
                            "(its job failed or the file was removed)")
            continue
        want = hashes.get(name)
        if want and (now := file_sha256(path)) != want:
            problems.append(f"FILE CHANGED: {path} has sha256 {now[:12]}, its record "
                            f"{want[:12]} (not the file this record was written for)")
        if record.get("kind") in STAMPED_KINDS and path.suffix in STAMPED_SUFFIXES:
            stamp = read_stamp(path)
            if stamp != record.get("id"):
                problems.append(f"STAMP MISMATCH: {path} carries provenance id {stamp}, its "
                                f"record is {record.get('id')} (an older or another copy)")
    return problems


def locate_input(path: str, record: Mapping[str, Any]) -> Path | None:
    """An input as recorded: relative paths are tried from here, then from the job's cwd."""
    candidates = [Path(path)]
    if not Path(path).is_absolute() and record.get("cwd"):
        candidates.append(Path(record["cwd"]) / path)
    return next((c for c in candidates if c.exists()), None)


def input_problems(record: Mapping[str, Any], digests: dict[Path, str | None] | None = None
                   ) -> list[str]:
    """Inputs that are gone or whose content is no longer the recorded one (``digests``, when
    given, keeps each input's digest for the next record that reads it)."""
    digests = {} if digests is None else digests
    problems = []
    for entry in record.get("inputs", []):
        path = locate_input(entry["path"], record)
        if path is None:
            problems.append(f"INPUT MISSING: {entry['path']} (recorded sha256 "
                            f"{str(entry.get('sha256'))[:12]})")
            continue
        want = entry.get("sha256")
        if want and path.resolve() not in digests:
            digests[path.resolve()] = content_sha256(path)
        if want and (now := digests[path.resolve()]) != want:
            problems.append(f"INPUT CHANGED: {entry['path']}: sha256 {str(now)[:12]} now, "
                            f"{want[:12]} when this was made (made from other numbers)")
    return problems


def run_status(record: Mapping[str, Any]) -> str:
    """The record's status, with ``running`` told apart by :func:`sharpness.runstate.run_state`
    (the one rule): ``interrupted`` when its owner is gone or its heartbeat is stale."""
    return run_state(dict(record))


def status_problems(record: Mapping[str, Any]) -> list[str]:
    """An interrupted run, said so (its record still reads ``running``)."""
    if run_status(record) != "interrupted":
        return []
    owner = record.get("owner") if isinstance(record.get("owner"), Mapping) else {}
    return [f"INTERRUPTED: the record says running but its owner is gone (pid "
            f"{owner.get('pid')} on {owner.get('host')}, last heartbeat "
            f"{record.get('heartbeat')}); rerun it to resume"]


def problems(prov: Path, record: Mapping[str, Any],
             digests: dict[Path, str | None] | None = None) -> list[str]:
    """Every check above on one record."""
    return (output_problems(prov, record) + input_problems(record, digests)
            + status_problems(record))
