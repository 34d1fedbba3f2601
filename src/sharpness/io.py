"""Atomic file writes.

Every file the pipeline writes goes through a temporary file in the same folder and an
``os.replace``, so a killed job never leaves a half-written result that a later run would
mistake for a finished one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np


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
    """Read a JSON file."""
    with open(path) as handle:
        return json.load(handle)


def append_jsonl(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one JSON record as a line (used for metrics streams, flushed at once)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(record, sort_keys=True, default=_json_default) + "\n")
        handle.flush()


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSON-lines file into a list of records."""
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]
