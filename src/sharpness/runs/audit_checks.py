"""What ``sharpness audit`` checks on disk, beyond reading a record: that the record is the one
its id was computed from, that the files it names are the files it was written for, that its
inputs are still what they were, and that a run shown as ``running`` is making progress.

* **The record itself**: its ``id`` is recomputed from its content
  (:func:`sharpness.runs.provenance.record_edited`); a setting, seed or status edited after the
  record was written, its id kept, is ``RECORD EDITED``; any field edited (the record's
  signature fails) is ``SIGNATURE MISMATCH``, a record without a signature ``UNSIGNED``, one
  signed by a key not trusted here ``UNKNOWN KEY`` (:mod:`sharpness.runs.signing`); the run
  folder's ``cache_key.json`` is checked the same way.
* **Outputs** (figures, tables, evaluations, the ledger, and the files a run recorded with
  ``output_sha256``): each file the record lists must exist beside it (else the record is
  *orphaned*: its job failed or the file was removed), have the SHA-256 the record holds, and
  (figures and tables) carry the record's id in its own metadata stamp (PDF keywords, PNG
  text, a comment in Markdown and LaTeX); an older copy put in place of the current file is
  caught by either.
* **Inputs**: each input still exists and its content (a file's SHA-256, a folder's
  :func:`sharpness.runs.provenance.folder_digest`) is the one recorded.
* **Liveness** (:func:`sharpness.runs.state.liveness`): a run record still saying ``running`` is
  ``interrupted`` when its owner is gone, ``stalled`` when its owner lives but its loop has
  made no progress for :data:`sharpness.runs.state.STALE_AFTER_S` seconds, ``unknown`` when it
  has no heartbeat or one from the future; each is a failed check that says why.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sharpness.runs.cache import KEY_FILE, read_key
from sharpness.runs.provenance import (
    PROVENANCE_NAME,
    content_sha256,
    file_sha256,
    record_edited,
)
from sharpness.runs.signing import signature_problem
from sharpness.runs.state import liveness, run_state

#: The stamp :mod:`sharpness.plots.save` writes into every figure and table file.
STAMP = re.compile(rb"sharpness-provenance:([0-9a-f]{16})")
STAMPED_KINDS = ("figure", "table")
STAMPED_SUFFIXES = (".pdf", ".png", ".md", ".tex")
#: how a record that is not signed by a trusted key is flagged (sharpness.runs.signing)
SIGNATURE_LABELS = ("UNSIGNED", "SIGNATURE MISMATCH", "UNKNOWN KEY")


def read_stamp(path: str | os.PathLike[str]) -> str | None:
    """The provenance id stamped into a figure or table file, or ``None`` when it has none."""
    match = STAMP.search(Path(path).read_bytes())
    return match.group(1).decode() if match else None


def output_problems(prov: Path, record: Mapping[str, Any]) -> list[str]:
    """Problems with the files a figure/table/evaluation record describes (none for a run).

    Outputs are looked up beside the record (sidecars sit next to their files), so a figure
    folder moved or copied elsewhere audits the same."""
    hashes = record.get("output_sha256") or {}
    # a figure's or table's files; for a run, the files it recorded for other jobs to read
    names = (record.get("outputs") or [record["artifact"]]) if "artifact" in record \
        else list(hashes)
    problems = []
    for name in names:
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
    """The record's status, with ``running`` told apart by :func:`sharpness.runs.state.run_state`
    (the one rule): ``interrupted`` when its owner is gone, ``stalled`` when its loop makes no
    progress, ``unknown`` without a possible heartbeat."""
    return run_state(dict(record))


#: what to do about a run record that says ``running`` but is not, by state
_ADVICE = {"interrupted": "rerun it to resume",
           "stalled": "stop that process, then rerun it to resume",
           "unknown": "check whether its process still works; if not, rerun it to resume"}


def status_problems(record: Mapping[str, Any]) -> list[str]:
    """A run whose record says ``running`` but that is not making progress, said so with why
    (:func:`sharpness.runs.state.liveness`): interrupted, stalled or unknown."""
    if record.get("status") != "running":
        return []
    state, why = liveness(dict(record))
    if state == "running":
        return []
    return [f"{state.upper()}: the record says running but {why}; {_ADVICE[state]}"]


def record_problems(record: Mapping[str, Any]) -> list[str]:
    """The record edited after it was written (its id no longer its content's hash), or not
    signed by a trusted key (``UNSIGNED``, ``SIGNATURE MISMATCH``, ``UNKNOWN KEY``)."""
    why = record_edited(dict(record))
    if why is None:
        return []
    label = "" if why.startswith(SIGNATURE_LABELS) else "RECORD EDITED: "
    return [f"{label}{why}; rebuild it (its job) rather than trust it"]


def key_problems(prov: Path) -> list[str]:
    """The run folder's ``cache_key.json`` (the sealed files' hashes), when there is one, not
    signed by a trusted key."""
    key = prov.parent / KEY_FILE
    if prov.name != PROVENANCE_NAME or not key.is_file():
        return []
    stored = read_key(prov.parent)
    why = signature_problem(stored) if stored is not None else "it cannot be read"
    return [] if why is None else [f"{key}: {why}; its sealed hashes are not used"]


def problems(prov: Path, record: Mapping[str, Any],
             digests: dict[Path, str | None] | None = None) -> list[str]:
    """Every check above on one record."""
    return (record_problems(record) + key_problems(prov) + output_problems(prov, record)
            + input_problems(record, digests) + status_problems(record))
