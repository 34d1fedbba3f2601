"""A heartbeat on the console for jobs that run longer than a few seconds.

Every job sends its output to its log under ``logs/`` (the rules redirect it), so the console
showed ``Job 0: eos: ...`` and then nothing for as long as the job ran, while its log
narrated the work. :class:`JobWatch` is a logging handler the Snakefile adds to Snakemake's
logger: it learns from Snakemake's own job events (``job_info``: what a job is and where it logs;
``job_started``, which a dry run never sends; ``job_finished``) which jobs run,
and a background thread prints, every :data:`EVERY_S` seconds, one line per job running
longer than :data:`AFTER_S`: how long it has run, its log's path and the last line of that
log (the job's own progress line: what it does and how far it is)::

    ... 0:00:24 eos: a setting's sweep (mnist_fcn_mse) | logs/eos/setting_mnist_fcn_mse.log
        [12:03:41] sweep lr 0.36 (4/6): step 1200, loss 0.0123

``SHARPNESS_HEARTBEAT_S`` sets the interval (0: off). Nothing here imports Snakemake: the
events are read by their names.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

#: seconds between two heartbeats (``SHARPNESS_HEARTBEAT_S`` overrides it)
EVERY_S = 10.0
#: a job running at least this long gets a heartbeat
AFTER_S = 5.0
#: the longest log line shown
WIDTH = 150


@dataclass
class Running:
    """A job Snakemake started: what its message says, its log files, when it began."""

    label: str
    logs: list[str]
    started: float


def every_s() -> float:
    """The heartbeat interval: ``SHARPNESS_HEARTBEAT_S`` when set, else :data:`EVERY_S`."""
    try:
        return max(0.0, float(os.environ.get("SHARPNESS_HEARTBEAT_S", EVERY_S)))
    except ValueError:
        return EVERY_S


def last_line(path: str | Path, tail: int = 4096) -> str:
    """The last non-empty line of ``path`` (its last ``tail`` bytes read), or ``""``."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - tail))
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1][:WIDTH] if lines else ""


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class JobWatch(logging.Handler):
    """Tracks running jobs from Snakemake's ``job_info`` / ``job_finished`` log events and
    prints their heartbeats (see the module docstring) to ``out``."""

    def __init__(self, every: float | None = None, after: float = AFTER_S,
                 out: TextIO | None = None) -> None:
        super().__init__(level=logging.DEBUG)
        self.every = every_s() if every is None else every
        self.after = after
        self.out = out
        self.jobs: dict[object, Running] = {}
        self.pending: dict[object, Running] = {}
        self.started: set[object] = set()
        # not `self.lock`: logging.Handler holds that one while it calls emit
        self.guard = threading.Lock()
        self.thread: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        event = str(getattr(record, "event", "") or "")
        try:
            if event == "job_info":  # what a job is and where it logs (a dry run too)
                label = getattr(record, "rule_msg", None) or getattr(record, "rule_name", "job")
                logs = [str(x) for x in (getattr(record, "log", None) or [])]
                jobid = getattr(record, "jobid", None)
                with self.guard:
                    job = Running(str(label), logs, time.time())
                    if jobid in self.started:
                        self.started.discard(jobid)
                        self.jobs[jobid] = job
                    else:
                        self.pending[jobid] = job
            elif event == "job_started":  # sent before each job's job_info, never in a dry run
                with self.guard:
                    for jobid in getattr(record, "jobs", None) or []:
                        if jobid in self.pending:
                            self.jobs[jobid] = self.pending.pop(jobid)
                            self.jobs[jobid].started = time.time()
                        else:
                            self.started.add(jobid)
                self._start()
            elif event == "job_finished":
                with self.guard:
                    self.jobs.pop(getattr(record, "job_id", None), None)
        except Exception:  # a heartbeat must never disturb Snakemake's own logging
            return

    def _start(self) -> None:
        if self.thread is None and self.every > 0:
            self.thread = threading.Thread(target=self._loop, name="sharpness-heartbeat",
                                           daemon=True)
            self.thread.start()

    def _loop(self) -> None:
        while True:
            time.sleep(self.every)
            self.beat()

    def lines(self, now: float | None = None) -> list[str]:
        """The heartbeat lines of the jobs running at least :attr:`after` seconds."""
        now = time.time() if now is None else now
        with self.guard:
            running = list(self.jobs.values())
        out = []
        for job in sorted(running, key=lambda j: j.started):
            if now - job.started < self.after:
                continue
            log = job.logs[0] if job.logs else ""
            out.append(f"... {_clock(now - job.started)} {job.label}"
                       + (f" | {log}" if log else ""))
            said = last_line(log) if log else ""
            if said:
                out.append(f"    {said}")
        return out

    def beat(self) -> None:
        """Print the heartbeat lines now (nothing when no job runs long enough)."""
        lines = self.lines()
        if lines:
            print("\n".join(lines), file=self.out or sys.stderr, flush=True)
