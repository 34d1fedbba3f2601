"""The records a build left behind, read as jobs for its crate.

Every job of the workflow that computes something writes a provenance record (a run's
``provenance.json``, a figure's, table's or the ledger's ``<stem>.provenance.json``); this
module finds them under a build's ``results/`` and ``figures/``, and gives each as a
:class:`Job`: its command, start, end and status, the files it read and the files it wrote
(by path relative to the build, with the SHA-256 the record holds). Records are untrusted
input: one that cannot be read, or whose fields have the wrong type, stops the crate with the
file named. A crate is published, so packing also refuses a record reached through a link
(``results/`` and ``figures/`` themselves may be links: where you keep them; nothing below
them may be) and one whose signature does not verify with a trusted key: a record planted as a
link to a file outside the build (a token in the home folder) would otherwise be copied into
the zip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sharpness.errors import SharpnessError
from sharpness.limits import load_json
from sharpness.runs.provenance import PROVENANCE_NAME, SIDECAR_SUFFIX, record_edited

#: the folders of a build that hold records (figures and tables; runs, evaluations, data)
RECORD_FOLDERS = ("figures", "results")


@dataclass
class Job:
    """One job, as its provenance record tells it."""

    record_path: str               # the record, relative to the build
    record: dict[str, Any]
    outputs: dict[str, str]        # file written (relative to the build) -> SHA-256
    inputs: list[dict[str, Any]]   # {path (relative when inside the build), sha256, id, folder}
    folder: str | None = None      # a run's folder (relative), None for an artifact

    @property
    def id(self) -> str:
        return str(self.record.get("id") or "")

    @property
    def kind(self) -> str:
        return str(self.record.get("kind") or "record")

    @property
    def subject(self) -> str:
        """What the job made: its figure, table or ledger file, or its run folder."""
        return str(self.record.get("artifact") and self.relative(self.record["artifact"])
                   or self.folder or self.record_path)

    @property
    def command(self) -> list[str]:
        command = self.record.get("command") or []
        return [str(word) for word in command] if isinstance(command, list) else [str(command)]

    def relative(self, path: str) -> str:
        """``path`` as the record wrote it (relative to its own ``cwd``), relative to the
        build when it lies inside it; left as written otherwise."""
        return _relative(path, self.record.get("cwd"), self.root)

    root: Path = field(default=Path("."), repr=False)


@dataclass
class Build:
    """Every job of a build, and its ledger (``claims.json``) when it has one."""

    root: Path
    jobs: list[Job]
    claims: dict[str, Any] | None = None
    claims_path: str | None = None

    @property
    def ledger(self) -> Job | None:
        """The ledger's job (its record's kind is ``ledger``), or None before the ledger."""
        return next((j for j in self.jobs if j.kind == "ledger"), None)

    @property
    def registration_file(self) -> str | None:
        """The registration the ledger was built under (relative to the build), or None."""
        ledger = self.ledger
        params = ledger.record.get("params") if ledger else None
        name = params.get("registration_file") if isinstance(params, dict) else None
        return ledger.relative(str(name)) if ledger and name else None


def _relative(path: str, cwd: Any, root: Path) -> str:
    full = Path(path) if os.path.isabs(path) else Path(str(cwd or root)) / path
    try:
        return Path(os.path.normpath(full)).relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def link_on_the_way(root: Path, rel: str) -> Path | None:
    """The first link on the way from ``root`` to ``root/rel`` (the file itself included),
    not counting a record folder (``results``, ``figures``) at the top; None when none."""
    path = root
    for position, part in enumerate(Path(rel).parts):
        path = path / part
        if path.is_symlink() and not (position == 0 and part in RECORD_FOLDERS):
            return path
    return None


def refuse_link(root: Path, rel: str, what: str) -> None:
    """Stop packing when the build's file ``rel`` is reached through a link."""
    link = link_on_the_way(root, rel)
    if link is not None:
        raise SharpnessError(f"{root / rel}: {what} reached through the link {link} -> "
                             f"{os.path.realpath(link)}; a crate never packs what a link "
                             "names (it could publish a file from outside the build). "
                             "Remove the link, or rebuild that file in place")


def _read(path: Path) -> dict[str, Any]:
    try:
        record = load_json(path.read_bytes(), f"{path}: provenance record",
                           max_bytes=64 * 2**20)
    except (OSError, SharpnessError) as exc:
        raise SharpnessError(f"{path}: not a readable provenance record ({exc}); "
                             "`sharpness audit --scan results figures` lists what is wrong "
                             "with a build's records") from exc
    if not isinstance(record, dict):
        raise SharpnessError(f"{path}: a provenance record is a JSON object, this is a "
                             f"{type(record).__name__}")
    for key, kind in (("output_sha256", dict), ("inputs", list), ("command", list)):
        if key in record and not isinstance(record[key], kind):
            raise SharpnessError(f"{path}: key {key!r} is a {type(record[key]).__name__}, "
                                 f"a provenance record's is a {kind.__name__}")
    return record


def record_files(root: Path) -> Iterator[Path]:
    """Every provenance record under the build's record folders, in path order (hidden
    folders such as ``.snakemake`` left out)."""
    for folder in RECORD_FOLDERS:
        base = root / folder
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name == PROVENANCE_NAME or name.endswith(SIDECAR_SUFFIX):
                    yield Path(dirpath) / name


def job_of(root: Path, path: Path) -> Job:
    """The job a record describes (a record reached through a link, edited, or not signed by
    a trusted key is refused: only what this build vouches for is published)."""
    rel = path.relative_to(root).as_posix()
    refuse_link(root, rel, "a provenance record")
    record = _read(path)
    job = Job(record_path=rel, record=record, outputs={}, inputs=[], root=root.resolve())
    hashes: Mapping[str, Any] = record.get("output_sha256") or {}
    if path.name == PROVENANCE_NAME:  # a run folder: its outputs are named inside it
        job.folder = path.parent.relative_to(root).as_posix()
        job.outputs = {f"{job.folder}/{name}": str(sha) for name, sha in hashes.items()}
    else:
        job.outputs = {job.relative(str(p)): str(sha) for p, sha in hashes.items()}
    for entry in record.get("inputs") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise SharpnessError(f"{path}: an entry of 'inputs' has no 'path': {entry!r}")
        job.inputs.append({**entry, "path": job.relative(entry["path"])})
    if (why := record_edited(record)) is not None:  # its id, and its signature by a trusted key
        raise SharpnessError(f"{path}: {why}; a crate publishes only records that verify "
                             "(`sharpness audit --scan results figures` lists them; rebuild "
                             "those, or trust their key)")
    return job


def read_build(root: str | os.PathLike[str]) -> Build:
    """Every job of the build at ``root`` and its ledger; a build without records is an
    error (there is nothing a crate could say about it)."""
    root = Path(root)
    jobs = [job_of(root, p) for p in record_files(root)]
    if not jobs:
        raise SharpnessError(f"{root}: no provenance records under "
                             f"{' or '.join(f'{root / f}/' for f in RECORD_FOLDERS)}; build "
                             "first (`make`, or `snakemake --cores all`)")
    build = Build(root=root, jobs=jobs)
    ledger = build.ledger
    if ledger is not None:
        name = next((p for p in ledger.outputs if p.endswith("claims.json")), None)
        if name and (root / name).is_file():
            build.claims_path = name
            build.claims = _read(root / name)
    return build
