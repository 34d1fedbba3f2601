"""The data behind a committed ledger: the figure CSVs and provenance sidecars it read, packed
beside its snapshot, so every verdict can be recomputed without rerunning a profile.

:func:`pack` writes ``<snapshot stem>.figures.tar.gz`` (each item's ``<paper>/<item>.csv`` and
``.provenance.json``, as the ledger's ``items`` column names them; gzip level 9, entries in a
fixed order with fixed times, so the same inputs give the same archive), refused above
:data:`MAX_BYTES`; :func:`unpack` extracts one into a folder (refusing links, absolute paths
and ``..``: an archive is untrusted), where ``sharpness claims build --figures`` reads it. The
8 MiB cap counts compressed bytes, which say nothing of what a member inflates to: unpacking
streams each member against :data:`LIMITS` (entries, bytes per member, bytes in all,
:mod:`sharpness.limits`) and stops at the first passed, naming it.
"""

from __future__ import annotations

import csv
import gzip
import io
import tarfile
import zlib
from pathlib import Path

from sharpness.errors import SharpnessError
from sharpness.limits import ArchiveLimits, Budget

#: the largest archive a snapshot may carry (bytes): a ledger's CSVs are tables, not runs
MAX_BYTES = 8 * 1024 * 1024
SUFFIX = ".figures.tar.gz"
#: what a snapshot's data may inflate to (the committed ones: 54 entries, a few MB in all)
LIMITS = ArchiveLimits(entries=2_000, member_bytes=64 * 2**20, total_bytes=256 * 2**20)


def archive_path(snapshot: str | Path) -> Path:
    """``docs/claims_evidence.csv`` -> ``docs/claims_evidence.figures.tar.gz``."""
    snapshot = Path(snapshot)
    return snapshot.with_name(snapshot.name.removesuffix(".csv") + SUFFIX)


def items_of(ledger_csv: str | Path) -> list[str]:
    """Every item a ledger's rows read (its ``items`` column)."""
    with Path(ledger_csv).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return sorted({i for r in rows for i in str(r.get("items") or "").split(";") if i})


def pack(ledger_csv: str | Path, figures: str | Path, out: str | Path,
         max_bytes: int = MAX_BYTES) -> Path:
    """Pack the CSV and sidecar of every item ``ledger_csv`` read from ``figures`` into
    ``out`` (items not built are left out, as the ledger read them); refused above
    ``max_bytes``."""
    figures, out = Path(figures), Path(out)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for item in items_of(ledger_csv):
            for name in (f"{item}.csv", f"{item}.provenance.json"):
                path = figures / name
                if not path.is_file():
                    continue
                data = path.read_bytes()
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tar.addfile(info, io.BytesIO(data))
    blob = buffer.getvalue()
    if len(blob) > max_bytes:
        raise SharpnessError(f"{out}: the ledger's data take {len(blob)} bytes compressed, more "
                             f"than the {max_bytes} a snapshot may carry")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(blob)
    return out


def unpack(archive: str | Path, dest: str | Path, limits: ArchiveLimits = LIMITS) -> Path:
    """Extract a snapshot's data archive into ``dest`` (plain files only, each under it),
    streaming each member against ``limits``; on any refusal the caller's ``dest`` (a
    temporary folder) holds what was written so far and is the caller's to remove."""
    archive, dest = Path(archive), Path(dest)
    if archive.stat().st_size > MAX_BYTES:
        raise SharpnessError(f"{archive}: larger than {MAX_BYTES} bytes; not a snapshot's data")
    budget = Budget(limits, str(archive))
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:  # one header at a time: a limit stops before the next member
                parts = Path(member.name).parts
                if not member.isfile() or member.name.startswith("/") or ".." in parts:
                    raise SharpnessError(f"{archive}: entry {member.name!r} is not a plain file "
                                         "under the archive's folder; refused")
                budget.entry(member.name, member.size)
                target = dest / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                handle = tar.extractfile(member)
                target.write_bytes(budget.read(member.name, handle) if handle else b"")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise SharpnessError(f"{archive}: not a readable snapshot archive ({err})") from err
    return dest


def stale_reason(record: dict, current_id: str | None) -> str | None:
    """Why a committed snapshot (its ``record``) is not a ledger of today's registration
    (``current_id``: the id of ``docs/registration/<profile>[-seedN].json``), or None: built
    under it, or marked superseded (``superseded.registration``: the registration it was
    built under, kept for ``claims compare``)."""
    built_under = record.get("registration")
    if current_id is not None and built_under == current_id:
        return None
    superseded = record.get("superseded") or {}
    if superseded and superseded.get("registration") == built_under:
        return None
    return (f"built under registration {built_under or '(none)'}, today's is "
            f"{current_id or '(none)'}: rebuild it under today's, or mark it superseded "
            "(`sharpness claims supersede`)")
