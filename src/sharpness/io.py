"""Atomic file writes that never follow a link.

Every file the pipeline writes goes through a temporary file in the same folder and an
``os.replace``, so a killed job never leaves a half-written result that a later run would
mistake for a finished one. The temporary file is made by ``mkstemp`` (a fresh name, created
exclusively: never a predictable name where someone could have put a link), and ``os.replace``
replaces a link found under the final name instead of writing through it, so the file the
link pointed to is never touched. A file that is appended to or locked in place
(:func:`open_regular`) is opened with ``O_NOFOLLOW`` and must be a regular file; a link there
is refused with :class:`LinkRefused`, which names it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from sharpness.errors import SharpnessError


class LinkRefused(SharpnessError, OSError):
    """A file the pipeline writes in place is a link (or not a regular file): never written
    through."""


def open_regular(path: str | os.PathLike[str], flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags | O_NOFOLLOW)``, refusing a link or anything that is not a
    regular file with :class:`LinkRefused` (naming it and what to do); returns the fd."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise LinkRefused(f"{path} is a link (to {os.readlink(path)}): the pipeline "
                              "writes this file in place and never through a link. Remove "
                              f"the link (`rm {path}`) and run again.") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LinkRefused(f"{path} is not a regular file: the pipeline writes this file in "
                          "place. Remove it and run again.")
    return fd


def links_under(*folders: str | os.PathLike[str]) -> list[Path]:
    """Every link inside ``folders``, not followed (a folder that is itself a link is where the
    user keeps that output, and is walked)."""
    found: list[Path] = []
    for folder in folders:
        for parent, dirs, files in os.walk(folder):
            found += [Path(parent) / n for n in (*dirs, *files)
                      if (Path(parent) / n).is_symlink()]
    return sorted(found)


def refuse_links(*folders: str | os.PathLike[str]) -> None:
    """Stop with :class:`LinkRefused` naming every link inside ``folders``: where the workflow
    writes through the shell or Snakemake itself (job logs, benchmark timings), which open the
    file in place and would write through a link to whatever it names."""
    links = links_under(*folders)
    if links:
        shown = "\n".join(f"  {p} -> {os.readlink(p)}" for p in links[:20])
        more = f"\n  ... and {len(links) - 20} more" if len(links) > 20 else ""
        raise LinkRefused(
            f"links found where the workflow writes ({', '.join(map(str, folders))}); a job "
            f"would write through them to the files they name:\n{shown}{more}\nNothing was "
            "run. Remove them (`find "
            + " ".join(map(str, folders)) + " -type l -delete` removes the links alone, not "
            "what they point to) and run again.")


def new_file_mode() -> int:
    """``0o666`` less the process umask: the mode ``open()`` would give a new file."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; rename it onto ``path`` only on success.

    The file gets the mode a plain ``open()`` would give it (0644 under the usual umask 022),
    not ``mkstemp``'s 0600, so a group sharing results on a cluster can read it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path, "w") as handle:
        handle.write(text)
    return Path(path)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")


def to_json(obj: Any) -> str:
    """Serialise ``obj`` (numpy scalars/arrays and paths included) as indented JSON."""
    return json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically."""
    return atomic_write_text(path, to_json(obj))


def atomic_save_npz(path: str | os.PathLike[str], **arrays: np.ndarray) -> Path:
    """Save arrays to a compressed ``.npz`` atomically."""
    with atomic_open(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    return Path(path)


def atomic_torch_save(path: str | os.PathLike[str], obj: Any) -> Path:
    """``torch.save`` through a temporary file (checkpoints survive a kill mid-write)."""
    import torch  # lazy: torch; every job and command imports io

    with atomic_open(path, "wb") as handle:
        torch.save(obj, handle)
    return Path(path)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file. A file nested too deeply for the parser is a ``ValueError`` (as any
    unreadable JSON is, an integer past 4,300 digits included), never a ``RecursionError``:
    every reader that handles a bad file handles a hostile one too."""
    with open(path) as handle:
        try:
            return json.load(handle)
        except RecursionError as exc:
            raise ValueError(f"{path}: JSON nested too deeply to read") from exc


def append_jsonl(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one JSON record as a line (used for metrics streams, flushed at once); a link
    under ``path`` is refused (:func:`open_regular`), never appended through."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, new_file_mode())
    with os.fdopen(fd, "a") as handle:
        handle.write(json.dumps(record, sort_keys=True, default=_json_default) + "\n")
        handle.flush()


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSON-lines file into a list of records."""
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]
