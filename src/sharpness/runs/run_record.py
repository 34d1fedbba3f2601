"""A run's record while it runs: written at its start, kept alive by its loop, completed at
its end (:class:`RunRecord`); the record itself is :mod:`sharpness.runs.provenance`'s."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sharpness.io import atomic_write_json
from sharpness.runs import state
from sharpness.runs.environment import now_iso
from sharpness.runs.provenance import (
    PROVENANCE_NAME,
    base_record,
    code_record,
    content_id,
    output_hashes,
)
from sharpness.runs.signing import sign


class RunRecord:
    """Context manager for a run's provenance: written at start, completed at the end.

    The status is ``running`` while the block executes, ``ok`` when it ends normally,
    ``interrupted`` when Ctrl-C or SIGTERM stops it, ``failed`` (with the error) when it
    raises. While it runs, the record names its ``owner`` (host, pid) and carries a
    ``heartbeat``: the time the run's own loop last reported progress
    (:func:`sharpness.runs.state.progressed`, called by the training loop at every step, by the
    gradient flows and by every progress line), written into the file by the loop's thread at
    most every :data:`sharpness.runs.state.HEARTBEAT_S` seconds. No background thread renews it:
    a loop that hangs stops renewing it, and :func:`sharpness.runs.state.run_state` reads the
    record as no longer ``running``. Code inside may call :meth:`set_status` (e.g.
    ``diverged`` with the step), :meth:`update` to add result fields and :meth:`outputs` to
    record the SHA-256 of the files other jobs will read. Every write recomputes the record's
    content-addressed ``id`` (its status is part of it).
    """

    def __init__(self, run_dir: str | os.PathLike[str], *, params: dict[str, Any],
                 seed: int | None = None, data: Sequence[dict[str, Any]] = (),
                 stand_ins: Sequence[str] = ()) -> None:
        self.path = Path(run_dir) / PROVENANCE_NAME
        self.record = base_record("run", params, seed=seed, data=data, stand_ins=stand_ins,
                                  status="running")
        self._status_set = False
        self._lock = threading.RLock()
        self._written = 0.0  # time.monotonic() of the last write

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

    def outputs(self, *names: str) -> dict[str, str]:
        """Record the SHA-256 of the files ``names`` of the run folder (written, complete)
        under ``output_sha256``: a job that reads them checks them against it
        (:func:`sharpness.runs.seal.read_verified`), and ``sharpness audit`` too."""
        hashes = output_hashes(self.path.parent, names)
        with self._lock:
            self.record["output_sha256"] = {**self.record.get("output_sha256", {}), **hashes}
        return hashes

    def _write(self) -> None:
        """Write the record with its id recomputed from its content (lock held)."""
        self.record["id"] = content_id(self.record)
        atomic_write_json(self.path, sign(self.record))
        self._written = time.monotonic()

    def progress(self) -> None:
        """The run's loop made progress: renew the heartbeat (in the file at most every
        :data:`sharpness.runs.state.HEARTBEAT_S` seconds). Called through
        :func:`sharpness.runs.state.progressed`, from the loop's own thread."""
        with self._lock:
            self.record["heartbeat"] = state.now_iso()
            if time.monotonic() - self._written >= state.HEARTBEAT_S:
                self._write()

    def __enter__(self) -> RunRecord:
        with self._lock:
            self.record.update(owner=state.owner(), heartbeat=state.now_iso())
            self._write()
        state.track(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        state.untrack(self)
        with self._lock:
            if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM (state.Interrupted)
                self.record.update(status="interrupted", error=f"{exc_type.__name__}: {exc}")
            elif exc is not None:
                self.record.update(status="failed", error=f"{exc_type.__name__}: {exc}")
            elif not self._status_set:
                self.record["status"] = "ok"
            self.record["ended"] = now_iso()
            # the code that ran: modules imported during the run count too
            self.record["code"] = code_record()
            self._write()
