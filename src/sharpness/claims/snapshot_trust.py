"""Which ledger the README's findings may come from: never one vouched for by a planted file.

``sharpness claims readme`` used to skip verifying a ledger whenever a ``<ledger>.record.json``
sat beside it (the mark of a committed snapshot), so a one-line planted record let an edited
``figures/claims.csv`` write a flipped verdict into ``README.md``. A record beside a ledger now
counts only when it is itself vouched for:

* the ledger is a committed snapshot, a file the project's checkout tracks (the checkout is
  trusted, as its code is; git asked with safe options, :mod:`sharpness.data.checkout`); or
* the record is signed by a trusted key (:mod:`sharpness.runs.signing`) and holds the
  SHA-256 of the ledger as it is now (``ledger_sha256``), as :func:`write_record` writes it.

Anything else is a run's ledger and is checked against the hash its build recorded
(:func:`sharpness.runs.seal.verify_result`); a ledger vouched for by neither is refused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sharpness.data.checkout import tracked_by_git
from sharpness.io import atomic_write_json
from sharpness.runs.signing import FIELD, sign, signature_problem

#: the record's field holding the SHA-256 of the snapshot it describes
LEDGER_HASH = "ledger_sha256"


def record_path(snapshot: str | Path) -> Path:
    """The record file of a committed ledger snapshot: ``docs/x.csv`` -> ``docs/x.record.json``
    (never ``x.json``: a run's own ``claims.json`` sits beside its ``claims.csv``)."""
    return Path(snapshot).with_suffix(".record.json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_record(snapshot: str | Path, record: dict[str, Any]) -> None:
    """Write ``record`` beside ``snapshot``, holding the snapshot's SHA-256 and signed."""
    body = {k: v for k, v in record.items() if k not in (FIELD, LEDGER_HASH)}
    body[LEDGER_HASH] = _sha256(Path(snapshot))
    atomic_write_json(record_path(snapshot), sign(body))


def checkout_record(snapshot: str | Path) -> dict[str, Any] | None:
    """The record beside a snapshot of the checkout being rendered (``sharpness readme
    refresh`` renders the checkout's own ``docs/``, trusted as its code is), read as it is."""
    path = record_path(snapshot)
    return json.loads(path.read_text()) if path.is_file() else None


def vouched_record(snapshot: str | Path) -> dict[str, Any] | None:
    """The record beside ``snapshot`` when it vouches for it (module docstring), else
    ``None``: no record, a record that is not valid JSON, unsigned, edited, signed by a key not
    trusted here or describing other bytes, unless the snapshot is committed."""
    path = record_path(snapshot)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (ValueError, RecursionError, OSError):
        return None
    if not isinstance(record, dict):
        return None
    if tracked_by_git(snapshot):
        return record
    if signature_problem(record) is None and record.get(LEDGER_HASH) == _sha256(Path(snapshot)):
        return record
    return None
