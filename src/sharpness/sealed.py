"""Sealed files: a cached file's SHA-256 in its folder's record, checked before it is used.

A checkpoint, a finished run's ``final.json`` and ``model.pt``, a flow's ``flow.json`` and
``flow.npz`` and a sweep's ``sweep.json`` may be picked up by a later call instead of being
computed. A file truncated by a full disk, cut short by a copy or changed by hand must never be
used, and must never be a dead end. :func:`seal` records the SHA-256 of such a file in the
folder's ``cache_key.json`` (:mod:`sharpness.cache`; field ``files``) right after it is written;
:func:`load_sealed` reuses it only when it matches and loads, and otherwise logs which file and
why and returns ``None`` so the caller recomputes; a reader of another job's file
(:func:`load_checked`) stops with :class:`DamagedFile`, which names the file and what to do.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sharpness.cache import KEY_FILE, read_key
from sharpness.errors import SharpnessError
from sharpness.provenance import file_sha256

log = logging.getLogger(__name__)

#: The field of ``cache_key.json`` holding ``{file name: sha256}`` of the sealed files.
FILES_FIELD = "files"


class DamagedFile(SharpnessError):
    """A cached file is unreadable or differs from the hash its folder's record holds."""


def seal(directory: str | os.PathLike[str], *names: str) -> None:
    """Record the SHA-256 of the files ``names`` of ``directory`` in its ``cache_key.json``
    (under ``files``), after they have been written: a later reuse checks the file against it
    (:func:`damage`). A folder without a key gets a record of its hashes alone."""
    from sharpness.io import atomic_write_json

    directory = Path(directory)
    record = read_key(directory) or {}
    files = {**record.get(FILES_FIELD, {}),
             **{name: file_sha256(directory / name) for name in names}}
    atomic_write_json(directory / KEY_FILE, {**record, FILES_FIELD: files})


def unseal(directory: str | os.PathLike[str], *names: str) -> None:
    """Forget the recorded hashes of ``names`` (files that were removed on purpose)."""
    from sharpness.io import atomic_write_json

    directory = Path(directory)
    record = read_key(directory)
    files = (record or {}).get(FILES_FIELD, {})
    if record is not None and any(name in files for name in names):
        kept = {k: v for k, v in files.items() if k not in names}
        atomic_write_json(directory / KEY_FILE, {**record, FILES_FIELD: kept})


def damage(directory: str | os.PathLike[str], name: str, *, require: bool = True) -> str | None:
    """Why the file ``name`` of ``directory`` must not be used (``None``: it matches the hash
    :func:`seal` recorded). A missing file is damaged; so is one with no recorded hash when
    ``require`` (a cache: a file written by a run killed before it recorded the hash is never
    reused), while a reader of a file made elsewhere (``require=False``) checks a hash only
    where one is recorded."""
    path = Path(directory) / name
    if not path.is_file():
        return "it is missing"
    recorded = (read_key(directory) or {}).get(FILES_FIELD, {}).get(name)
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
