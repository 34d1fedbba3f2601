"""Which run folders are being written now, and by which process: what a refused invocation
is told.

Snakemake marks a job's outputs incomplete while the job runs, and cannot tell a running job
from a killed one: a second invocation asking for such a target stops with
``IncompleteFilesException``, whose text says to rerun with ``--rerun-incomplete``. Done while
the first job still runs, that deletes the job's outputs as it writes them. The run-folder
locks (:mod:`sharpness.runs.lock`, ``<parent>/.<name>.lock``, holder text inside) know what
Snakemake does not: which folder is held, by which process, and whether it is alive.

:func:`held_folders` lists them; :func:`refusal_note` turns them into the lines added under
Snakemake's refusal; :class:`RefusalNote`, a plain logging handler that the Snakefile adds to
Snakemake's logger while it plans, writes those lines whenever a record names
``IncompleteFilesException`` or ``LockException``; ``sharpness locks`` prints the same list.
Read-only: nothing here takes or removes a lock, and nothing here imports Snakemake.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sharpness.runs.lock import describe, read_holder

#: Snakemake's refusals that a running job of another invocation can cause
REFUSALS = ("IncompleteFilesException", "LockException")


@dataclass(frozen=True)
class Held:
    """One run-folder lock whose file names a holder."""

    folder: str  #: the run folder (as found under its root)
    holder: dict[str, Any]  #: pid, host, since, command (sharpness.runs.lock)
    alive: bool | None  #: the holder runs (True), has ended (False), or is on another host

    def line(self) -> str:
        """``FOLDER: written now by pid N on HOST since T (COMMAND)`` and the like."""
        if self.alive is False:
            return (f"{self.folder}: left by {describe(self.holder)}, which has ended without "
                    "releasing it (killed?); the next writer takes it over")
        where = "" if self.alive else " (on another host: not checked from here)"
        return f"{self.folder}: written now by {describe(self.holder)}{where}"


def holder_alive(holder: dict[str, Any]) -> bool | None:
    """Whether the holder's process runs: None when it is on another host (or its pid is
    unreadable), else whether its pid exists on this one."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def held_folders(roots: Iterable[str | os.PathLike[str]] = ("results",)) -> list[Held]:
    """Every lock file under ``roots`` that names a holder (the lock is held, or its holder
    ended without releasing it), sorted by folder. A released lock's file is empty."""
    found = []
    for root in dict.fromkeys(map(str, roots)):
        for parent, _, files in os.walk(root):
            for name in files:
                if not (name.startswith(".") and name.endswith(".lock") and len(name) > 6):
                    continue
                folder = os.path.join(parent, name[1:-len(".lock")])
                holder = read_holder(folder)
                if holder:
                    found.append(Held(folder, holder, holder_alive(holder)))
    return sorted(found, key=lambda h: h.folder)


def refusal_note(refusal: str, roots: Iterable[str | os.PathLike[str]] = ("results",)) -> str:
    """What to add under Snakemake's ``refusal`` (an exception name of :data:`REFUSALS`):
    the run folders held now and by whom, and what to do (wait, or rerun)."""
    roots = [str(r) for r in roots]
    held = held_folders(roots)
    running = [h for h in held if h.alive is not False]
    flag = "--rerun-incomplete" if refusal == "IncompleteFilesException" else "--unlock"
    lines = ["", f"sharpness: run folders under {', '.join(roots)} (`sharpness locks` lists "
                 "them again):"]
    lines += [f"  {h.line()}" for h in held] or ["  none is being written now"]
    if running:
        pids = ", ".join(sorted({str(h.holder.get("pid")) for h in running}))
        advice = (f"Another invocation's job is still running (pid {pids}). Do not use {flag} "
                  "until it has ended: Snakemake would delete that job's outputs while it "
                  "writes them. Run the same command again once it has ended; its finished "
                  "runs are then reused.")
    elif refusal == "IncompleteFilesException":
        advice = ("No process writes a run folder here now: the incomplete files were left by "
                  "a job that was killed. If no other snakemake runs in this folder, rerun with "
                  "--rerun-incomplete (a training run resumes from its last checkpoint).")
    else:
        advice = ("No process writes a run folder here now. If no other snakemake runs in "
                  "this folder, `snakemake --unlock`, then the same command again.")
    return "\n".join([*lines, textwrap.fill(advice, 100, break_on_hyphens=False)])


class RefusalNote(logging.Handler):
    """A logging handler that writes :func:`refusal_note` under a refusal's own message: the
    Snakefile adds it to Snakemake's logger, whose error records name the exception."""

    def __init__(self, roots: list[str]) -> None:
        super().__init__(level=logging.ERROR)
        self.roots = roots

    def emit(self, record: logging.LogRecord) -> None:
        refusal = getattr(record, "exception", None)
        if refusal not in REFUSALS:
            return
        try:
            note = refusal_note(refusal, self.roots)
        except Exception:  # a note must never hide Snakemake's own message
            return
        sys.stdout.flush()
        print(note, file=sys.stderr, flush=True)
