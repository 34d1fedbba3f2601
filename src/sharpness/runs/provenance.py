"""Provenance records: where every run, figure and table came from.

A *run* (a training run, a flow integration, a sweep) writes ``provenance.json`` into its
directory; a *figure* or *table* writes a sidecar ``<stem>.provenance.json`` listing the runs and
files it was drawn from. Each record carries the code version (git commit and whether the tree
was dirty), the resolved parameters, seeds, data sets with checksums, package versions, device,
start/end time and command, so ``sharpness audit FILE`` can walk any number back to its origin.

The ``id`` is content-addressed (:func:`content_id`): the SHA-256 of the kind, the resolved
params, the seed, the status (``ok``, ``diverged``, ``running``, ...), the code fingerprint (the sources of every ``sharpness`` module the process
loaded, as on disk, so a dirty tree counts, plus the numeric packages' versions), the data
checksums, and every input's content: the SHA-256 of an input file, or the digest of an input
folder (:func:`folder_digest`: each file's path and SHA-256, each record inside it by its id),
together with the id of the record behind the input. Different inputs give different ids; the
same artifact from the same inputs and code gives the same id on any machine (no paths, hosts or
times enter it). ``sharpness diff A B`` says which of those parts differ between two records.
Because the id is recomputable from the record, a record edited after it was written (a
setting, the seed or the status changed, its id kept) no longer matches it; and every record is
signed when written (:mod:`sharpness.runs.signing`: every field, with a key kept outside the
results tree), so an edit of any other field, or a record rewritten with its id recomputed,
fails its signature: :func:`record_edited` says so, ``sharpness audit`` flags it and every
reader of the record (:func:`sharpness.runs.seal.read_verified`) refuses it.

An artifact's sidecar is written last, once its files are complete (:func:`artifact_record`
builds the record, the caller stamps the id into the files, :func:`commit_artifact_record`
adds the files' SHA-256 and writes it), so a record never describes a file that was not
written; :func:`discard_artifact_record` removes a stale one when its job fails. A run records
the SHA-256 of the files other jobs read from its folder the same way
(:meth:`sharpness.runs.run_record.RunRecord.outputs`, ``write_run_provenance(outputs=...)``:
field ``output_sha256``). A run that is still going keeps its record current through
:class:`sharpness.runs.run_record.RunRecord`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sharpness.config.variant import read_record as read_variant
from sharpness.io import atomic_write_json, read_json, to_json
from sharpness.runs.cache import canonical, loaded_code_manifest, manifest_fingerprint
from sharpness.runs.environment import code_version, device_info, now_iso, package_versions
from sharpness.runs.signing import sign, signature_problem

PROVENANCE_NAME = "provenance.json"
SIDECAR_SUFFIX = ".provenance.json"
def params_id(obj: Any) -> str:
    """A short stable hash of a JSON-able object (same settings, same id)."""
    return hashlib.sha256(to_json(obj).encode()).hexdigest()[:12]


def file_sha256(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """SHA-256 of a file, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _outside_content(name: str) -> bool:
    """Files of a folder that say when, where or who, not what, are left out of its digest:
    hidden files and temporary files of atomic writes, locks, pids, logs, heartbeats and
    wall-clock timings (a run keeps those apart from its metrics, which are functions of its
    config and seed alone; a figure that reads a timing file names that file as its input)."""
    return (name.startswith((".", "timing", "heartbeat"))
            or name.endswith((".tmp", ".lock", ".pid", ".log")))


def folder_digest(folder: str | os.PathLike[str]) -> str:
    """SHA-256 of a folder's content: every file's relative path and SHA-256, in path order;
    a provenance record inside it enters by its ``id`` (its times and hosts are not content).

    Two copies of one run folder digest alike wherever they lie; a changed number in any of
    its files changes the digest."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(_outside_content(part) for part in rel.parts):
            continue
        if path.name == PROVENANCE_NAME or path.name.endswith(SIDECAR_SUFFIX):
            try:
                record = read_json(path)
                # a record edited after it was written enters by its bytes, not its stale id
                # intact as written, whichever key signed it (trust is the reader's call)
                value = (f"record {record.get('id')}" if not record_edited(record, trust=False)
                         else f"edited record {file_sha256(path)}")
            except (OSError, ValueError, AttributeError):
                value = f"unreadable record {file_sha256(path)}"
        else:
            value = file_sha256(path)
        digest.update(f"{rel.as_posix()}\0{value}\n".encode())
    return digest.hexdigest()


def content_sha256(path: str | os.PathLike[str]) -> str | None:
    """SHA-256 of a file or :func:`folder_digest` of a folder (``None`` when it is gone)."""
    path = Path(path)
    if path.is_file():
        return file_sha256(path)
    if path.is_dir():
        return folder_digest(path)
    return None


#: Keys of a data entry that name where it lies, not what it is (left out of ids).
_DATA_PLACE_KEYS = ("file", "path", "root", "folder", "dir")


def content_id(record: dict[str, Any]) -> str:
    """The content-addressed id of a record (see the module docstring)."""
    record = json.loads(to_json(record))  # the record as its file holds it
    body = {
        "kind": record.get("kind"),
        "params": record.get("params", {}),
        "seed": record.get("seed"),
        "status": record.get("status"),
        "code": (record.get("code") or {}).get("fingerprint"),
        "data": [{k: v for k, v in d.items() if k not in _DATA_PLACE_KEYS}
                 for d in record.get("data", [])],
        "inputs": [{k: e.get(k) for k in ("sha256", "id")} for e in record.get("inputs", [])],
    }
    return hashlib.sha256(canonical(body).encode()).hexdigest()[:16]


def record_edited(record: Any, trust: bool = True) -> str | None:
    """Why ``record`` is not the record its job wrote (``None``: it is). Its ``id`` must be
    the :func:`content_id` of its content (a setting, the seed, the status, the code
    fingerprint, a data checksum or an input's hash changed, its id kept), and its signature
    (:mod:`sharpness.runs.signing`) must cover every other field too (stand-ins, caption,
    command, output hashes, times) with a trusted key: unsigned, mismatching and unknown-key
    records are reported as such (the key's trust is not checked when ``trust`` is false)."""
    if not isinstance(record, dict):
        return "it is not a provenance record (not a JSON object)"
    recorded = record.get("id")
    if not recorded:
        return "it has no id"
    try:
        actual = content_id(record)
    except (TypeError, ValueError, AttributeError) as exc:
        return f"its content cannot be hashed ({type(exc).__name__}: {exc})"
    if actual != recorded:
        return (f"its id {recorded} is not the hash of its content ({actual}): a setting, the "
                "seed, the status, the code, the data or an input was changed after it was "
                "written")
    return signature_problem(record, trust)


def code_record() -> dict[str, Any]:
    """Code version, fingerprint and per-file hashes of the ``sharpness`` modules loaded."""
    manifest = loaded_code_manifest()
    return {**code_version(), "fingerprint": manifest_fingerprint(manifest), "files": manifest}


def base_record(kind: str, params: dict[str, Any] | None = None, *, seed: int | None = None,
                data: Sequence[dict[str, Any]] = (), stand_ins: Sequence[str] = (),
                command: Sequence[str] | None = None,
                inputs: Sequence[str | os.PathLike[str]] = (),
                status: str | None = None) -> dict[str, Any]:
    """The fields every provenance record has, ``id`` (content-addressed) included."""
    params = json.loads(to_json(dict(params or {})))
    record = {
        "kind": kind,
        "code": code_record(),
        "params": params,
        "seed": seed,
        "status": status,
        "data": list(data),
        "inputs": [input_entry(p) for p in inputs],
        "stand_ins": list(stand_ins),
        "packages": package_versions(),
        "device": device_info(),
        "command": list(command if command is not None else sys.argv),
        "cwd": os.getcwd(),
        "started": now_iso(),
    }
    variant = read_variant()  # a build with other settings than its profile's names them
    if variant is not None:
        record["variant"] = variant
    # the earliest job behind this record: its own start or that of any input's producer
    # (a figure built today from runs trained last week began last week)
    record["first_started"] = earliest([record["started"]] + [
        str(e["started"]) for e in record["inputs"] if e.get("started")])
    return {"id": content_id(record), **record}


def earliest(stamps: Sequence[str]) -> str:
    """The earliest of ISO-8601 time stamps (one that cannot be read is passed over; all
    unreadable: the first)."""
    def when(text: str) -> datetime.datetime | None:
        try:
            moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)

    readable = [(w, t) for t in stamps if (w := when(t)) is not None]
    return min(readable)[1] if readable else stamps[0]


def output_hashes(folder: str | os.PathLike[str], names: Sequence[str]) -> dict[str, str]:
    """``{name: SHA-256}`` of the files ``names`` of ``folder`` (all must exist)."""
    folder = Path(folder)
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: output(s) {', '.join(missing)} not written; "
                                "no hash recorded")
    return {n: file_sha256(folder / n) for n in names}


def write_run_provenance(run_dir: str | os.PathLike[str], *, params: dict[str, Any],
                         seed: int | None = None, data: Sequence[dict[str, Any]] = (),
                         stand_ins: Sequence[str] = (), status: str = "ok",
                         inputs: Sequence[str | os.PathLike[str]] = (),
                         extra: dict[str, Any] | None = None,
                         outputs: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``run_dir/provenance.json`` for a finished run and return the record; ``inputs``
    (files or folders it read, e.g. the runs it evaluated) enter its id; ``outputs`` (names of
    files in ``run_dir`` that other jobs read) get their SHA-256 recorded (``output_sha256``),
    which :func:`sharpness.runs.seal.read_verified` checks before a reader uses them."""
    record = base_record("run", params, seed=seed, data=data, stand_ins=stand_ins,
                         inputs=inputs, status=status)
    record.update(ended=now_iso(), **(extra or {}))
    if outputs:
        record["output_sha256"] = output_hashes(run_dir, outputs)
    atomic_write_json(Path(run_dir) / PROVENANCE_NAME, sign(record))
    return record


def sidecar_path(artifact: str | os.PathLike[str]) -> Path:
    """The provenance sidecar of a figure or table: ``<stem>.provenance.json``."""
    artifact = Path(artifact)
    return artifact.with_name(artifact.stem + SIDECAR_SUFFIX)


def find_provenance(path: str | os.PathLike[str]) -> Path | None:
    """The provenance file that describes ``path`` (a run dir, a file in one, or an artifact)."""
    path = Path(path)
    if path.name == PROVENANCE_NAME or path.name.endswith(SIDECAR_SUFFIX):
        return path if path.exists() else None
    if path.is_dir():
        candidate = path / PROVENANCE_NAME
        return candidate if candidate.exists() else None
    side = sidecar_path(path)
    if side.exists():
        return side
    for parent in path.parents:
        candidate = parent / PROVENANCE_NAME
        if candidate.exists():
            return candidate
        if (parent / ".git").exists() or parent == parent.parent:
            break
    return None


def input_entry(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Describe one input of an artifact: its path, the SHA-256 of its content (a file's, or a
    folder's :func:`folder_digest`) and the id of the record behind it."""
    prov = find_provenance(path)
    entry: dict[str, Any] = {"path": str(path)}
    digest = content_sha256(path)
    if digest is not None:
        entry["sha256"] = digest
    if Path(path).is_dir():
        entry["folder"] = True
    if prov is not None:
        try:
            record = read_json(prov)
            entry.update(id=record.get("id"), provenance=str(prov),
                         status=record.get("status"))
            began = record.get("first_started") or record.get("started")
            if began:
                entry["started"] = str(began)
        except (OSError, json.JSONDecodeError):
            entry["provenance"] = str(prov)
    return entry


def artifact_record(artifact: str | os.PathLike[str], *, kind: str,
                    inputs: Sequence[str | os.PathLike[str]] = (),
                    params: dict[str, Any] | None = None, caption: str | None = None,
                    stand_ins: Sequence[str] = (), data: Sequence[dict[str, Any]] = (),
                    outputs: Sequence[str | os.PathLike[str]] = ()) -> dict[str, Any]:
    """The record of a figure, table or evaluation, not yet written: its ``id`` is known, so
    the caller can stamp it into the files before :func:`commit_artifact_record`."""
    record = base_record(kind, params, data=data, stand_ins=stand_ins, inputs=inputs,
                         status="ok")
    record.update(artifact=str(artifact), outputs=[str(p) for p in outputs or [artifact]],
                  caption=caption)
    return record


def commit_artifact_record(record: dict[str, Any]) -> dict[str, Any]:
    """Add the SHA-256 of every output (all must exist: the record comes last) and the end
    time, then write the sidecar; returns the record."""
    missing = [p for p in record["outputs"] if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"provenance of {record['artifact']}: output(s) "
                                f"{', '.join(missing)} not written; no record made")
    record["output_sha256"] = {p: file_sha256(p) for p in record["outputs"]}
    record["ended"] = now_iso()
    atomic_write_json(sidecar_path(record["artifact"]), sign(record))
    return record


def write_artifact_provenance(artifact: str | os.PathLike[str], *, kind: str,
                              inputs: Sequence[str | os.PathLike[str]] = (),
                              params: dict[str, Any] | None = None,
                              caption: str | None = None, stand_ins: Sequence[str] = (),
                              data: Sequence[dict[str, Any]] = (),
                              outputs: Sequence[str | os.PathLike[str]] = ()) -> dict[str, Any]:
    """Write the sidecar of a finished figure, table or evaluation (its files already written;
    ``outputs`` defaults to the artifact alone) and return its record (``id`` included)."""
    return commit_artifact_record(artifact_record(
        artifact, kind=kind, inputs=inputs, params=params, caption=caption,
        stand_ins=stand_ins, data=data, outputs=outputs))


def discard_artifact_record(artifact: str | os.PathLike[str]) -> Path | None:
    """Remove the sidecar of ``artifact`` (its job failed: the record would vouch for files
    that are stale or gone); returns the path removed, or ``None``."""
    side = sidecar_path(artifact)
    if Path(artifact).is_dir() or not side.is_file():
        return None
    side.unlink()
    return side
