"""One writer per run folder: an advisory lock held by the process that writes the folder.

Two processes that write one run folder at once interleave their files (two ``sharpness
train`` into one ``--out`` once wrote every epoch twice into ``metrics.jsonl``). Every command
that writes a run folder or a cached artifact therefore holds :func:`run_lock` on it while it
works. A second writer waits, and says for whom (pid, host, start time, command); once the
first has finished, the second finds the finished artifacts under the same cache key and
reuses them (:mod:`sharpness.runs.cache`), so nothing is computed twice and nothing is interleaved.

The lock is ``flock`` on a small file *beside* the folder, ``<parent>/.<name>.lock``, never
inside it: Snakemake deletes a job's ``directory()`` outputs before it reruns the job, and a
lock file deleted with its folder would let a new writer lock a fresh file while the old one
still writes. The kernel releases the lock when its holder exits, killed or not, so a lock is
never stale; the file's text names the last holder, and a holder that did not release cleanly
(the text is still there when the next writer takes the lock) is reported as taken over. The
lock file itself is never removed (removing it would race with a waiter that opened it).
The lock file is opened with ``O_NOFOLLOW`` and must be a regular file: a link put at its
name is refused (:class:`sharpness.io.LinkRefused`), never truncated or written through.
Locks are per open file, so they also work between processes of one host on NFS (Linux
emulates ``flock`` with POSIX locks there when the server supports locking).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sharpness.errors import SharpnessError
from sharpness.io import open_regular

log = logging.getLogger(__name__)

#: ``SHARPNESS_LOCK_TIMEOUT`` (seconds): how long a second writer waits before it stops with
#: :class:`RunFolderBusy`; unset waits as long as the holder works (what a second Snakemake
#: invocation asking for the same run needs), ``0`` stops at once.
TIMEOUT_ENV = "SHARPNESS_LOCK_TIMEOUT"
_POLL_S = 0.2
_held: dict[Path, int] = {}  # lock files this process holds -> depth (re-entrant)


class RunFolderBusy(SharpnessError):
    """Another process holds the run folder's lock and the wait ran out."""


def lock_path(folder: str | os.PathLike[str]) -> Path:
    """The lock file of ``folder``: ``<parent>/.<name>.lock``."""
    folder = Path(folder).resolve()  # one lock per folder, whatever path names it
    return folder.parent / f".{folder.name}.lock"


def _holder_text() -> str:
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                       "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "command": " ".join(os.path.basename(a) if i == 0 else a
                                           for i, a in enumerate(sys.argv))[:300]})


def read_holder(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Who holds (or last held without releasing) ``folder``'s lock, from the lock file."""
    try:
        text = lock_path(folder).read_text()
    except OSError:
        return None
    return _parse(text)


def _parse(text: str) -> dict[str, Any] | None:
    try:
        holder = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return {"pid": "?", "host": "?", "since": "?", "command": text[:100]}
    return holder if isinstance(holder, dict) else None


def describe(holder: dict[str, Any] | None) -> str:
    """``pid N on HOST since T (COMMAND)`` for a log line."""
    if not holder:
        return "another process (it has not written its pid yet)"
    return (f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('since')} "
            f"({holder.get('command')})")


def _timeout(wait: float | None) -> float | None:
    if wait is not None:
        return wait
    value = os.environ.get(TIMEOUT_ENV, "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        raise SharpnessError(f"{TIMEOUT_ENV}={value!r} is not a number of seconds") from None


@contextlib.contextmanager
def run_lock(folder: str | os.PathLike[str], *, wait: float | None = None,
             what: str = "run folder", enabled: bool = True) -> Iterator[Path]:
    """Hold the write lock of ``folder`` for the block; yields the lock file's path.

    A lock held by another process is waited for (``wait`` seconds, default
    ``SHARPNESS_LOCK_TIMEOUT``, else without limit), with one WARNING line naming the holder;
    when the wait runs out, :class:`RunFolderBusy` names the holder. Re-entrant within a
    process. ``enabled=False`` (a DDP rank other than 0, which writes nothing) is a no-op."""
    path = lock_path(folder)
    if not enabled:
        yield path
        return
    if path in _held:  # this process holds it already (a command calling another)
        _held[path] += 1
        try:
            yield path
        finally:
            _held[path] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_regular(path, os.O_RDWR | os.O_CREAT)  # a link there: refused, never truncated
    try:
        _acquire(fd, folder, _timeout(wait), what)
        previous = _parse(os.pread(fd, 4096, 0).decode(errors="replace"))
        if previous:  # its holder ended without releasing: killed, or its host went away
            log.warning("%s %s: taking over the lock left by %s, which ended without "
                        "releasing it (killed?)", what, folder, describe(previous))
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder_text().encode(), 0)
        os.fsync(fd)
        _held[path] = 1
        try:
            yield path
        finally:
            del _held[path]
            os.ftruncate(fd, 0)  # released cleanly: the next writer sees no holder
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` if it is free; False when another process holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False
    return True


def _acquire(fd: int, folder: str | os.PathLike[str], timeout: float | None, what: str) -> None:
    if _try_lock(fd):
        return
    holder = _parse(os.pread(fd, 4096, 0).decode(errors="replace"))
    if timeout == 0:
        raise RunFolderBusy(f"{what} {folder} is being written by {describe(holder)}; it "
                            f"holds the lock {lock_path(folder)}. Wait for it to finish (the "
                            "finished run is then reused), or stop that process.")
    limit = "" if timeout is None else f" (at most {timeout:g} s, {TIMEOUT_ENV})"
    log.warning("%s %s is being written by %s; waiting for it to finish%s", what, folder,
                describe(holder), limit)
    start = time.monotonic()
    while not _try_lock(fd):
        if timeout is not None and time.monotonic() - start >= timeout:
            raise RunFolderBusy(f"{what} {folder} is still being written by "
                                f"{describe(holder)} after {timeout:g} s; it holds the lock "
                                f"{lock_path(folder)}")
        time.sleep(_POLL_S)
    log.warning("%s %s: the lock is free after %.1f s; going on (finished work is reused)",
                what, folder, time.monotonic() - start)
