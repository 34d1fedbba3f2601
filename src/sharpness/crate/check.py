"""``sharpness audit --crate ZIP FIGURE``: check a figure against a build's crate alone.

A reader who holds a crate (from a paper's supplement, WorkflowHub or Zenodo) and a figure
(or table) checks, without the build's ``results/`` folder:

* every file of the crate has the SHA-256 its metadata states (the zip is what was packed);
* the figure's bytes (the reader's copy, or the crate's) have the SHA-256 the crate states,
  the SHA-256 its own provenance record holds, and carry that record's id in their stamp;
* the record is the one its id was computed from, and so is each record it names as an input
  that the crate holds;
* the commit the figure was made from is the build's, from a clean tree;
* the ledger's registration is in the crate, its content still matches its id, and it is the
  one the ledger says it was built under; the claims whose verdict reads the figure are listed.

Each failed check is a ``!!!`` line; the crate is read, never unpacked to disk, never run.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from sharpness.crate.bounds import LIMITS, MAX_METADATA_BYTES, entities_of
from sharpness.crate.vouch import signed_checks, vouching_record
from sharpness.errors import SharpnessError
from sharpness.limits import ArchiveLimits, Budget, LimitExceeded, load_json
from sharpness.runs.provenance import record_edited

STAMP = re.compile(rb"sharpness-provenance:([0-9a-f]{16})")
METADATA = "ro-crate-metadata.json"


class Crate:
    """A crate zip's metadata graph and its files' bytes, read within :data:`LIMITS` (a crate
    comes from elsewhere: its entries, what each inflates to and what all do are bounded, and
    its metadata must be a graph of entities with string ids and types)."""

    def __init__(self, path: str | os.PathLike[str], limits: ArchiveLimits | None = None
                 ) -> None:
        self.path = Path(path)
        self.budget = Budget(limits or LIMITS, f"--crate {path}")
        try:
            self.zip = zipfile.ZipFile(self.path)
            for info in self.zip.infolist():
                self.budget.entry(info.filename)
            graph = load_json(self._member(METADATA, MAX_METADATA_BYTES),
                              f"--crate {path}: {METADATA}")["@graph"]
        except LimitExceeded:
            raise
        except (OSError, zipfile.BadZipFile, KeyError, ValueError, TypeError,
                SharpnessError) as exc:
            raise SharpnessError(f"--crate {path}: not an RO-Crate zip with a readable "
                                 f"{METADATA} ({type(exc).__name__}: {exc})") from exc
        self.entities = entities_of(graph, f"--crate {path}")

    def _member(self, name: str, cap: int | None = None) -> bytes:
        """A member's bytes, streamed within the per-member (or ``cap``) and total limits."""
        with self.zip.open(name) as handle:
            return self.budget.read(name, handle, cap)

    def get(self, ident: Any) -> dict[str, Any]:
        ident = ident.get("@id") if isinstance(ident, dict) else ident
        return self.entities.get(str(ident), {})

    def refs(self, entity: dict[str, Any], key: str) -> list[dict[str, Any]]:
        value = entity.get(key)
        values = value if isinstance(value, list) else [] if value is None else [value]
        return [self.get(v) for v in values]

    def read(self, ident: str) -> bytes | None:
        """The bytes of the file ``ident`` names: its zip member, found by the id as written
        or percent-decoded (an RO-Crate id is a URI path, so ``lr_1.13e+00`` is written
        ``lr_1.13e%2B00``); None when the zip holds neither."""
        for name in dict.fromkeys((ident, unquote(ident))):
            try:
                return self._member(name)
            except KeyError:
                continue
            except (zipfile.BadZipFile, OSError, ValueError) as exc:
                raise SharpnessError(f"--crate {self.path}: member {name!r} cannot be read "
                                     f"({type(exc).__name__}: {exc})") from exc
        return None

    def record(self, ident: str) -> dict[str, Any] | None:
        data = self.read(ident)
        try:
            record = load_json(data, f"{ident} in the crate") if data is not None else None
        except LimitExceeded:
            raise
        except SharpnessError:
            return None
        return record if isinstance(record, dict) else None

    def producer(self, ident: str) -> dict[str, Any]:
        """The job action whose result holds the entity ``ident`` (directly or in a run
        folder), or {}."""
        for entity in self.entities.values():
            if entity.get("@type") != "CreateAction" or entity.get("@id") == "#workflow-run":
                continue
            for result in self.refs(entity, "result"):
                if result.get("@id") == ident or ident in {p.get("@id") for p in
                                                           self.refs(result, "hasPart")}:
                    return entity
        return {}


def _files_intact(crate: Crate) -> list[str]:
    """The crate's files whose bytes no longer have the SHA-256 its metadata states."""
    bad = []
    for ident, entity in crate.entities.items():
        if "File" in entity.get("@type", []) and entity.get("sha256"):
            data = crate.read(ident)
            if data is None:
                bad.append(f"CRATE FILE MISSING: {ident} is described but not in the zip")
            elif hashlib.sha256(data).hexdigest() != entity["sha256"]:
                bad.append(f"CRATE FILE CHANGED: {ident} has sha256 "
                           f"{hashlib.sha256(data).hexdigest()[:12]}, the crate states "
                           f"{entity['sha256'][:12]}")
    return bad


def _find(crate: Crate, figure: str) -> tuple[str, bytes | None]:
    """The crate's id of ``figure`` (a path inside the crate, or a local file found by its
    path, its name or its SHA-256) and the bytes to check."""
    local = Path(figure)
    data = local.read_bytes() if local.is_file() else None
    candidates = [Path(os.path.normpath(figure)).as_posix()]
    if data is not None:
        sha = hashlib.sha256(data).hexdigest()
        candidates += [i for i, e in crate.entities.items() if e.get("sha256") == sha]
        candidates += [i for i in crate.entities if i.endswith("/" + local.name)]
    for ident in candidates:
        if "File" in crate.get(ident).get("@type", []):
            return ident, data if data is not None else crate.read(ident)
    raise SharpnessError(f"{figure}: not in the crate {crate.path} (looked for it by path, "
                         "name and SHA-256); `unzip -l` lists what it holds")


def _same_name_here(figure: str, ident: str, sha: str) -> list[str]:
    """An information line when the working folder holds a file at the crate's path of
    ``ident`` other than the one checked, with other bytes: it is not what was given, so it
    never decides the verdict, but a reader comparing the two should know."""
    here = Path(ident)
    if not here.is_file() or here.resolve() == Path(figure).resolve():
        return []
    local = hashlib.sha256(here.read_bytes()).hexdigest()
    if local == sha:
        return []
    return [f"  note:     {ident} in this folder has other bytes (sha256 {local[:12]}); it was "
            f"not checked: give its path to check it"]


def _record_checks(crate: Crate, ident: str, data: bytes, sha: str,
                   record_path: str) -> tuple[list[str], list[str], dict[str, Any]]:
    record = crate.record(record_path) or {}
    lines = [f"  record:   {record_path} (id {record.get('id')}, kind {record.get('kind')}, "
             f"status {record.get('status')})"]
    bad = []
    if not record:
        return lines, [f"NO RECORD: {record_path} is not a readable record in the crate"], {}
    if (why := record_edited(record)) is not None:
        bad.append(f"RECORD EDITED: {record_path}: {why}")
    hashes = {Path(os.path.normpath(p)).as_posix(): h for p, h in
              (record.get("output_sha256") or {}).items()}
    recorded = next((h for p, h in hashes.items() if p == ident or p.endswith("/" + ident)),
                    None)
    if recorded is not None and recorded != sha:
        bad.append(f"FILE CHANGED: {ident} has sha256 {sha[:12]}, its record {recorded[:12]}")
    bad += signed_checks(record, record_path, ident, recorded)
    stamp = STAMP.search(data)
    if ident.endswith((".pdf", ".png", ".md", ".tex")) and (
            not stamp or stamp.group(1).decode() != record.get("id")):
        found = stamp.group(1).decode() if stamp else "no stamp"
        bad.append(f"STAMP MISMATCH: {ident} carries {found}, its record is {record.get('id')}")
    for entry in record.get("inputs") or []:
        held = next((e for e in crate.entities.values()
                     if e.get("identifier") == entry.get("id") and entry.get("id")), None)
        where = crate.get(held.get("result")).get("@id") if held else None
        lines.append(f"  input:    {where or entry.get('path')} record {entry.get('id')} "
                     f"({'in the crate' if held else 'not in the crate'})")
        sub = crate.record(crate.get(held.get("subjectOf")).get("@id", "")) if held else None
        if sub is not None and (why := record_edited(sub)) is not None:
            bad.append(f"INPUT RECORD EDITED: {entry.get('path')}: {why}")
    return lines, bad, record


def _registration_changed(crate: Crate, held: str, registered: str) -> list[str]:
    """The registration's content no longer matches its id, or it is not the ledger's."""
    from sharpness.claims.registration import read_registration

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(held).name
        copy.write_bytes(crate.read(held) or b"")
        try:
            reg = read_registration(copy)
        except SharpnessError as exc:
            return [f"REGISTRATION CHANGED: {held}: {str(exc).split(': ', 1)[-1]}"]
    if reg.get("id") != registered:
        return [f"REGISTRATION CHANGED: {held} has id {reg.get('id')}; the ledger was built "
                f"under {registered}"]
    return []


def _registration(crate: Crate, ident: str) -> tuple[list[str], list[str]]:
    """The ledger's registration, and the claims that read the figure."""
    lines, bad = [], []
    ledger = next((r for i, e in crate.entities.items() if i.endswith("CLAIMS.provenance.json")
                   and (r := crate.record(i))), None)
    if ledger is None:
        return ["  ledger:   none in the crate"], []
    params = ledger.get("params") or {}
    name, registered = params.get("registration_file"), params.get("registration")
    if not registered:
        lines.append("  registration: none (the ledger was built without one)")
    else:
        held = next((i for i in crate.entities if name and str(name).endswith(i)), None)
        reg = crate.record(held) if held else None
        if reg is None:
            bad.append(f"REGISTRATION MISSING: the ledger was built under {registered} "
                       f"({name}), which the crate does not hold")
        else:
            lines.append(f"  registration: {held} id {reg.get('id')}, commit "
                         f"{str(reg.get('git_commit'))[:12]}, registered {reg.get('registered')}")
            bad += _registration_changed(crate, held, registered)
    item = ident.rsplit(".", 1)[0].removeprefix("figures/")
    claims = [e for e in crate.entities.values() if e.get("@type") == "Claim"
              and any(r.get("@id", "").startswith(f"figures/{item}.")
                      for r in crate.refs(e, "isBasedOn"))]
    lines += [f"  claim:    {c.get('name')}: {c.get('creativeWorkStatus')}" for c in claims]
    return lines, bad


def audit_crate(crate_path: str | os.PathLike[str], figures: Sequence[str]
                ) -> tuple[list[str], list[str]]:
    """``(lines, failed checks)`` for each figure checked against the crate; a crate whose
    content has a shape no check expects (a record whose fields are of other types) is
    refused in one line, never a traceback."""
    try:
        return _audit(crate_path, figures)
    except (TypeError, AttributeError, KeyError, ValueError, RecursionError) as exc:
        raise SharpnessError(f"--crate {crate_path}: malformed content ({type(exc).__name__}: "
                             f"{str(exc)[:200]}); not a crate this command can check (refused, "
                             "nothing run)") from exc


def _audit(crate_path: str | os.PathLike[str], figures: Sequence[str]
           ) -> tuple[list[str], list[str]]:
    crate = Crate(crate_path)
    workflow = crate.get(crate.get("./").get("mainEntity"))
    commit = workflow.get("version")
    lines = [f"crate {crate_path}: workflow {workflow.get('@id')} at commit {commit}"]
    found = _files_intact(crate)
    lines += [f"  !!! {p}" for p in found] or [
        f"  files:    every file's SHA-256 is the one the crate states "
        f"({sum('File' in e.get('@type', []) for e in crate.entities.values())} files)"]
    for figure in figures:
        ident, data = _find(crate, figure)
        sha = hashlib.sha256(data or b"").hexdigest()
        stated = crate.get(ident).get("sha256")
        lines.append(f"{figure}: {ident} in the crate, sha256 {sha[:12]}")
        lines += _same_name_here(figure, ident, sha)
        bad = [] if sha == stated else [
            f"FILE CHANGED: {figure} has sha256 {sha[:12]}, the crate states {str(stated)[:12]}"]
        record_path, mismatch = vouching_record(crate, ident, crate.producer(ident))
        bad += mismatch
        if not record_path:
            bad.append(f"NO RECORD: no job of the crate made {ident}")
        else:
            more, worse, record = _record_checks(crate, ident, data or b"", sha, record_path)
            lines += more
            bad += worse
            code = record.get("code") or {}
            lines.append(f"  code:     {code.get('git_commit')} (dirty: {code.get('dirty')})")
            if commit and code.get("git_commit") != commit:
                bad.append(f"COMMIT: {ident} was made at {code.get('git_commit')}, the "
                           f"build's workflow at {commit}")
            if code.get("dirty"):
                lines.append(f"  !!! DIRTY TREE: made from uncommitted changes to "
                             f"{', '.join(code.get('dirty_files') or [])}")
        more, worse = _registration(crate, ident)
        lines += more + [f"  !!! {p}" for p in bad + worse]
        found += bad + worse
    return lines, found


__all__ = ["Crate", "audit_crate"]
