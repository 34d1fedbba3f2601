"""Provenance records: where every run, figure and table came from.

A *run* (a training run, a flow integration, a sweep) writes ``provenance.json`` into its
directory; a *figure* or *table* writes a sidecar ``<stem>.provenance.json`` listing the runs and
files it was drawn from. Each record carries the code version (git commit and whether the tree
was dirty), the resolved parameters, seeds, data sets with checksums, package versions, device,
start/end time and command, so ``sharpness audit FILE`` can walk any number back to its origin.

The ``id`` is content-addressed (:func:`content_id`): the SHA-256 of the kind, the resolved
params, the seed, the code fingerprint (the sources of every ``sharpness`` module the process
loaded, as on disk, so a dirty tree counts, plus the numeric packages' versions), the data
checksums, and every input's content: the SHA-256 of an input file, or the digest of an input
folder (:func:`folder_digest`: each file's path and SHA-256, each record inside it by its id),
together with the id of the record behind the input. Different inputs give different ids; the
same artifact from the same inputs and code gives the same id on any machine (no paths, hosts or
times enter it). ``sharpness diff A B`` says which of those parts differ between two records.

An artifact's sidecar is written last, once its files are complete (:func:`artifact_record`
builds the record, the caller stamps the id into the files, :func:`commit_artifact_record`
adds the files' SHA-256 and writes it), so a record never describes a file that was not
written; :func:`discard_artifact_record` removes a stale one when its job fails.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from sharpness.io import atomic_write_json, read_json, to_json

PROVENANCE_NAME = "provenance.json"
SIDECAR_SUFFIX = ".provenance.json"
TRACKED_PACKAGES = ("sharpness", "torch", "torchvision", "numpy", "scipy", "matplotlib",
                    "seaborn", "snakemake", "grad-cam")


def now_iso() -> str:
    """Current UTC time as an ISO-8601 string."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@functools.lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """Git commit and dirtiness of the checkout the package runs from (or the version only)."""
    here = Path(__file__).resolve().parent
    info: dict[str, Any] = {"package_version": _version("sharpness"), "git_commit": None,
                            "dirty": None, "dirty_files": []}
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True, timeout=10).stdout.strip()
        status = subprocess.run(["git", "-C", str(here), "status", "--porcelain",
                                 "--untracked-files=no"], check=True, capture_output=True,
                                text=True, timeout=10).stdout
        info.update(git_commit=commit, dirty=bool(status.strip()),
                    dirty_files=[line[3:] for line in status.splitlines() if line.strip()])
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str | None]:
    """Versions of the packages whose behaviour decides the numbers."""
    return {name: _version(name) for name in TRACKED_PACKAGES}


def device_info() -> dict[str, Any]:
    """The device the numbers were computed on (CPU model / CUDA device, thread count)."""
    info: dict[str, Any] = {"host": socket.gethostname(), "platform": platform.platform(),
                            "python": platform.python_version(), "cpu": platform.processor()
                            or platform.machine(), "cpu_count": os.cpu_count()}
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["cuda"] = torch.cuda.get_device_name(0)
    return info


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
                value = f"record {read_json(path).get('id')}"
            except (OSError, ValueError):
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
    from sharpness.cache import canonical

    body = {
        "kind": record.get("kind"),
        "params": record.get("params", {}),
        "seed": record.get("seed"),
        "code": record.get("code", {}).get("fingerprint"),
        "data": [{k: v for k, v in d.items() if k not in _DATA_PLACE_KEYS}
                 for d in record.get("data", [])],
        "inputs": [{k: e.get(k) for k in ("sha256", "id")} for e in record.get("inputs", [])],
    }
    return hashlib.sha256(canonical(body).encode()).hexdigest()[:16]


def code_record() -> dict[str, Any]:
    """Code version, fingerprint and per-file hashes of the ``sharpness`` modules loaded."""
    from sharpness.cache import loaded_code_manifest, manifest_fingerprint

    manifest = loaded_code_manifest()
    return {**code_version(), "fingerprint": manifest_fingerprint(manifest), "files": manifest}


def base_record(kind: str, params: dict[str, Any] | None = None, *, seed: int | None = None,
                data: Sequence[dict[str, Any]] = (), stand_ins: Sequence[str] = (),
                command: Sequence[str] | None = None,
                inputs: Sequence[str | os.PathLike[str]] = ()) -> dict[str, Any]:
    """The fields every provenance record has, ``id`` (content-addressed) included."""
    params = json.loads(to_json(dict(params or {})))
    record = {
        "kind": kind,
        "code": code_record(),
        "params": params,
        "seed": seed,
        "data": list(data),
        "inputs": [input_entry(p) for p in inputs],
        "stand_ins": list(stand_ins),
        "packages": package_versions(),
        "device": device_info(),
        "command": list(command if command is not None else sys.argv),
        "cwd": os.getcwd(),
        "started": now_iso(),
    }
    return {"id": content_id(record), **record}


def write_run_provenance(run_dir: str | os.PathLike[str], *, params: dict[str, Any],
                         seed: int | None = None, data: Sequence[dict[str, Any]] = (),
                         stand_ins: Sequence[str] = (), status: str = "ok",
                         inputs: Sequence[str | os.PathLike[str]] = (),
                         extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``run_dir/provenance.json`` for a finished run and return the record; ``inputs``
    (files or folders it read, e.g. the runs it evaluated) enter its id."""
    record = base_record("run", params, seed=seed, data=data, stand_ins=stand_ins,
                         inputs=inputs)
    record.update(status=status, ended=now_iso(), **(extra or {}))
    atomic_write_json(Path(run_dir) / PROVENANCE_NAME, record)
    return record


class RunRecord:
    """Context manager for a run's provenance: written at start, completed at the end.

    The status is ``running`` while the block executes, ``ok`` when it ends normally,
    ``interrupted`` when Ctrl-C or SIGTERM stops it, ``failed`` (with the error) when it
    raises. While it runs, the record names its ``owner`` (host, pid) and renews its
    ``heartbeat`` (:func:`sharpness.runstate.run_state` reads both to tell a killed run).
    Code inside may call :meth:`set_status` (e.g. ``diverged`` with the step) and
    :meth:`update` to add result fields.
    """

    def __init__(self, run_dir: str | os.PathLike[str], *, params: dict[str, Any],
                 seed: int | None = None, data: Sequence[dict[str, Any]] = (),
                 stand_ins: Sequence[str] = ()) -> None:
        self.path = Path(run_dir) / PROVENANCE_NAME
        self.record = base_record("run", params, seed=seed, data=data, stand_ins=stand_ins)
        self.record["status"] = "running"
        self._status_set = False
        # liveness (sharpness.runstate): who runs it, and a heartbeat while it runs
        self._lock = threading.Lock()
        self._heartbeat: Any = None

    def set_status(self, status: str, **fields: Any) -> None:
        """Record a final status (``ok``, ``diverged``, ``failed``) and any detail fields."""
        with self._lock:
            self.record["status"] = status
            self.record.update(fields)
        self._status_set = True

    def update(self, **fields: Any) -> None:
        """Add result fields to the record."""
        with self._lock:
            self.record.update(fields)

    def __enter__(self) -> RunRecord:
        from sharpness import runstate

        self.record.update(owner=runstate.owner(), heartbeat=runstate.now_iso())
        atomic_write_json(self.path, self.record)
        self._heartbeat = runstate.Heartbeat(self._beat).start()
        return self

    def _beat(self) -> None:
        from sharpness.runstate import now_iso

        with self._lock:
            self.record["heartbeat"] = now_iso()
            atomic_write_json(self.path, self.record)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM (runstate.Interrupted)
            self.record.update(status="interrupted", error=f"{exc_type.__name__}: {exc}")
        elif exc is not None:
            self.record.update(status="failed", error=f"{exc_type.__name__}: {exc}")
        elif not self._status_set:
            self.record["status"] = "ok"
        self.record["ended"] = now_iso()
        # the code that ran: modules imported during the run count too
        self.record["code"] = code_record()
        self.record["id"] = content_id(self.record)
        atomic_write_json(self.path, self.record)


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
    record = base_record(kind, params, data=data, stand_ins=stand_ins, inputs=inputs)
    record.update(artifact=str(artifact), outputs=[str(p) for p in outputs or [artifact]],
                  caption=caption, status="ok")
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
    atomic_write_json(sidecar_path(record["artifact"]), record)
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
