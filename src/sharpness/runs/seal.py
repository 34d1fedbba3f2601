"""Sealed files: a cached file's SHA-256 in its folder's record, checked before it is used.

A checkpoint, a finished run's ``final.json`` and ``model.pt``, a flow's ``flow.json`` and
``flow.npz`` and a sweep's ``sweep.json`` may be picked up by a later call instead of being
computed. A file truncated by a full disk, cut short by a copy or changed by hand must never be
used, and must never be a dead end. :func:`seal` records the SHA-256 of such a file in the
folder's ``cache_key.json`` (:mod:`sharpness.runs.cache`; field ``files``) right after it is written;
:func:`load_sealed` reuses it only when it matches and loads, and otherwise logs which file and
why and returns ``None`` so the caller recomputes; a reader of another job's file
(:func:`load_checked`) stops with :class:`DamagedFile`, which names the file and what to do.

**Result files** (:func:`read_verified`, the one function every reader of another job's file
calls: the claims build, the figure and table commands, the report and the gallery): a figure's
or table's CSV, caption and files (their sidecar's ``output_sha256``), a run's files for other
jobs (its ``provenance.json``'s ``output_sha256``, or the folder's sealed hashes) and the
provenance records themselves (their id recomputed from their content,
:func:`sharpness.runs.provenance.record_edited`). A file without a recorded hash, with another
hash, or a record edited after it was written stops the reader with
:class:`UnverifiedResult`, which names the file and the command that rebuilds it.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sharpness.errors import SharpnessError
from sharpness.io import read_json
from sharpness.runs.cache import KEY_FILE, read_key, write_key
from sharpness.runs.provenance import (
    PROVENANCE_NAME,
    SIDECAR_SUFFIX,
    file_sha256,
    record_edited,
    sidecar_path,
)
from sharpness.runs.signing import signature_problem

log = logging.getLogger(__name__)

#: The field of ``cache_key.json`` holding ``{file name: sha256}`` of the sealed files.
FILES_FIELD = "files"


class DamagedFile(SharpnessError):
    """A cached file is unreadable or differs from the hash its folder's record holds."""


def seal(directory: str | os.PathLike[str], *names: str) -> None:
    """Record the SHA-256 of the files ``names`` of ``directory`` in its ``cache_key.json``
    (under ``files``), after they have been written: a later reuse checks the file against it
    (:func:`damage`). A folder without a key gets a record of its hashes alone."""
    directory = Path(directory)
    record = read_key(directory) or {}
    files = {**record.get(FILES_FIELD, {}),
             **{name: file_sha256(directory / name) for name in names}}
    write_key(directory, {**record, FILES_FIELD: files})


def unseal(directory: str | os.PathLike[str], *names: str) -> None:
    """Forget the recorded hashes of ``names`` (files that were removed on purpose)."""
    directory = Path(directory)
    record = read_key(directory)
    files = (record or {}).get(FILES_FIELD, {})
    if record is not None and any(name in files for name in names):
        kept = {k: v for k, v in files.items() if k not in names}
        write_key(directory, {**record, FILES_FIELD: kept})


def damage(directory: str | os.PathLike[str], name: str, *, require: bool = True) -> str | None:
    """Why the file ``name`` of ``directory`` must not be used (``None``: it matches the hash
    :func:`seal` recorded). A missing file is damaged; so is one with no recorded hash when
    ``require`` (a cache: a file written by a run killed before it recorded the hash is never
    reused), while a reader of a file made elsewhere (``require=False``) checks a hash only
    where one is recorded."""
    path = Path(directory) / name
    if not path.is_file():
        return "it is missing"
    key = read_key(directory)
    if key is not None and (why := signature_problem(key)) is not None:
        return f"its folder's record {Path(directory) / KEY_FILE} is not trusted: {why}"
    recorded = (key or {}).get(FILES_FIELD, {}).get(name)
    if recorded is None:
        return ("its folder's record holds no hash of it (written before it was sealed)"
                if require else None)
    actual = file_sha256(path)
    if actual != recorded:
        return (f"its SHA-256 {actual[:12]} differs from the recorded {recorded[:12]} "
                f"(truncated or changed after it was written; {path.stat().st_size} bytes)")
    return None


def load_sealed(directory: str | os.PathLike[str], name: str, loader: Callable[[Path], Any],
                *, what: str, also: Sequence[str] = ()) -> Any | None:
    """``loader(directory / name)`` when that file and the files ``also`` (which the cached
    result needs too, e.g. the model of a finished run) match their recorded hashes and the
    loader succeeds; otherwise ``None`` (recompute), with a WARNING that says which file and
    why. ``None`` without a word when ``name`` does not exist (nothing cached)."""
    directory = Path(directory)
    if not (directory / name).exists():
        return None
    try:
        return load_checked(directory / name, loader, what=what, also=also)
    except DamagedFile as exc:
        log.warning("%s; recomputing it", exc)
        return None


def load_checked(path: str | os.PathLike[str], loader: Callable[[Path], Any], *, what: str,
                 also: Sequence[str] = (), require: bool = True, hint: str = "") -> Any:
    """``loader(path)`` after :func:`damage` found ``path`` and the files ``also`` beside it
    intact; :class:`DamagedFile` (naming the file, the reason and ``hint``, what to do) when
    not, or when the loader fails (the file is then not used)."""
    path = Path(path)
    tail = f". {hint}" if hint else ""
    for name in (path.name, *also):
        reason = damage(path.parent, name, require=require)
        if reason is not None:
            raise DamagedFile(f"{what}: {path.parent / name} is not used: {reason}{tail}")
    try:
        return loader(path)
    except Exception as exc:  # any failure to read it: the file is not usable
        raise DamagedFile(f"{what}: {path} is not used: it cannot be read "
                          f"({type(exc).__name__}: {exc}){tail}") from exc


# -- result files ----------------------------------------------------------------------------

class UnverifiedResult(DamagedFile):
    """A result file a job reads is not the one its producer recorded (edited, damaged, or
    never recorded), or a provenance record was edited after it was written."""


def _json(path: Path) -> Any:
    return read_json(path)


def _is_record(path: Path) -> bool:
    return path.name == PROVENANCE_NAME or path.name.endswith(SIDECAR_SUFFIX)


def _record_candidates(path: Path) -> list[Path]:
    """Where the hash of ``path`` may be recorded: its figure's or table's sidecar (the same
    stem: ``fig.csv`` and ``fig.caption.txt`` -> ``fig.provenance.json``), then its folder's
    run record."""
    stems = [sidecar_path(path), path.with_name(path.name.split(".")[0] + SIDECAR_SUFFIX)]
    out: list[Path] = []
    for candidate in [*stems, path.parent / PROVENANCE_NAME]:
        if candidate not in out and candidate != path and candidate.is_file():
            out.append(candidate)
    return out


def _hash_in(records: list[Path], path: Path
             ) -> tuple[str | None, Path | None, dict[str, Any] | None]:
    """The first of ``records`` whose ``output_sha256`` names ``path``'s file."""
    for candidate in records:
        try:
            record = _json(candidate)
        except (OSError, ValueError):
            continue
        hashes = record.get("output_sha256") if isinstance(record, dict) else None
        for key, value in (hashes or {}).items():
            if Path(key).name == path.name and isinstance(value, str):
                return value, candidate, record
    return None, None, None


def recorded_sha256(path: str | os.PathLike[str]
                    ) -> tuple[str | None, Path | None, dict[str, Any] | None]:
    """``(sha256, where, record)``: the SHA-256 the producer of ``path`` recorded, the file
    it is recorded in (a sidecar, a run's ``provenance.json`` or the folder's
    ``cache_key.json``) and that record; all ``None`` when no hash of it is recorded
    anywhere."""
    path = Path(path)
    tried = _record_candidates(path)
    found = _hash_in(tried, path)
    if found[0] is not None:
        return found
    key = read_key(path.parent) or {}
    files = key.get(FILES_FIELD, {})
    if isinstance(files, dict) and isinstance(files.get(path.name), str):
        return files[path.name], path.parent / KEY_FILE, key
    # an output of another stem's record (the ledger's CLAIMS.provenance.json lists claims.csv)
    others = [c for c in sorted(path.parent.glob(f"*{SIDECAR_SUFFIX}"))
              if c not in tried and c != path]
    return _hash_in(others, path)


def _problem(where: Path, record: dict[str, Any]) -> str | None:
    """Why the record ``where`` holds is not to be trusted: a provenance record's id and
    signature, a ``cache_key.json``'s signature."""
    return signature_problem(record) if where.name == KEY_FILE else record_edited(record)


def rebuild_hint(path: str | os.PathLike[str], record: dict[str, Any] | None = None) -> str:
    """How to rebuild ``path``: the workflow command, and the command its job ran (from the
    record of its producer, when there is one). Pass only a record that passed its check: a
    command from a record that failed it is never shown (it could be anything)."""
    text = f"Rebuild it: `snakemake --cores all --forcerun {shlex.quote(str(path))}`"
    command = (record or {}).get("command") if isinstance(record, dict) else None
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        if Path(command[0]).name == "sharpness":  # the entry point, wherever it is installed
            command = ["sharpness", *command[1:]]
        text += f" (the job that wrote it ran `{shlex.join(command)}`)"
    return text + "."


def verify_result(path: str | os.PathLike[str], *, what: str = "result file") -> Path:
    """``path``, after checking it is the file its producer recorded; else
    :class:`UnverifiedResult` naming it, why, and the command that rebuilds it.

    A provenance record (``provenance.json``, a sidecar) must have the id of its content. Any
    other file must have the SHA-256 recorded by the job that wrote it (its sidecar's or run
    record's ``output_sha256``, or its folder's sealed hashes); that record must itself be
    unedited. A file of which no hash is recorded is not used either: nothing says it is the
    file that job wrote."""
    path = Path(path)
    if not path.is_file():
        raise UnverifiedResult(f"{what}: {path} is missing. {rebuild_hint(path)}")
    if _is_record(path):
        try:
            record = _json(path)
        except (OSError, ValueError) as exc:
            raise UnverifiedResult(f"{what}: {path} is not used: it cannot be read "
                                   f"({type(exc).__name__}: {exc}). "
                                   f"{rebuild_hint(path)}") from exc
        why = record_edited(record)
        if why is not None:  # its command is not shown: the record failed its check
            raise UnverifiedResult(f"{what}: {path} is not used: {why}. {rebuild_hint(path)}")
        return path
    recorded, where, record = recorded_sha256(path)
    if recorded is None:
        raise UnverifiedResult(
            f"{what}: {path} is not used: no job recorded its SHA-256 (no provenance sidecar "
            f"or run record beside it lists it), so nothing says it is the file the pipeline "
            f"wrote. {rebuild_hint(path)}")
    if record is not None and where is not None and (why := _problem(where, record)):
        raise UnverifiedResult(f"{what}: {path} is not used: the record of its hash, {where}, "
                               f"was edited or is not signed by a trusted key: {why}. {rebuild_hint(path)}")
    actual = file_sha256(path)
    if actual != recorded:
        raise UnverifiedResult(
            f"{what}: {path} is not used: its SHA-256 {actual[:12]} differs from the "
            f"{recorded[:12]} that {where} recorded when it was written (edited or damaged "
            f"after the build; {path.stat().st_size} bytes). {rebuild_hint(path, record)}")
    return path


def read_verified(path: str | os.PathLike[str], loader: Callable[[Path], Any] | None = None,
                  *, what: str = "result file") -> Any:
    """Read a result file another job wrote, after :func:`verify_result`: ``loader(path)``
    (default: JSON for ``.json`` files, else the bytes). The one way every reader of a result
    file (the claims build, figures, tables, the report) opens it; a file that fails the check
    stops the reader with :class:`UnverifiedResult` naming it and the command that rebuilds
    it, and a file that cannot be parsed stops it the same way."""
    path = verify_result(path, what=what)
    if loader is None:
        loader = _json if path.suffix == ".json" else Path.read_bytes
    try:
        return loader(path)
    except Exception as exc:  # unreadable although its hash matched: still not usable
        raise UnverifiedResult(f"{what}: {path} is not used: it cannot be read "
                               f"({type(exc).__name__}: {exc}). {rebuild_hint(path)}") from exc


def report_provenance(target: str | os.PathLike[str]) -> str:
    """The provenance id ``snakemake --report`` shows for a figure or table, after every file
    of the item (PDF/PNG or Markdown/LaTeX, CSV, caption) was checked against the hash its
    sidecar recorded and the sidecar against its id (:func:`verify_result`); ``"missing"``
    when the item has no record (not built). An edited file stops the report with
    :class:`UnverifiedResult` naming it and the command that rebuilds it."""
    target = Path(target)
    side = sidecar_path(target)
    if not side.is_file():
        return "missing"
    record = read_verified(side, what="report")
    for name in record.get("outputs") or [record.get("artifact") or target]:
        verify_result(side.parent / Path(name).name, what="report")
    return str(record.get("id"))
