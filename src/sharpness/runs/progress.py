"""Progress of long jobs, watchable wherever stderr goes.

On a terminal a job shows a tqdm bar. Anywhere else (the workflow sends every job's stderr to
its log file under ``logs/``) it writes plain progress lines instead, so ``tail -f`` on a log
shows what the job is doing::

    [12:03:41] train results/lesam/.../seed0: epoch 3/10 (30%) | loss 1.2345 | acc 0.561 | elapsed 0:00:42 | left ~0:01:38

A line is written at each epoch (or logged step) unless the previous line is less than
``every_s`` seconds old (default :data:`EVERY_S`, or the environment variable
``SHARPNESS_PROGRESS_S``), and inside a long epoch at most every ``every_s`` seconds; the last
unit always gets its line. :func:`say` writes one time-stamped line (the eos sweeps use it to
say which learning rate runs and how it ended).

Every report (``update``, ``note``, ``say``) is also progress of the run that makes it: it
renews the heartbeat of the run records open in the process
(:func:`sharpness.runs.state.progressed`), so a run's liveness comes from its own loop.

This module imports neither torch nor numpy.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, TextIO

from sharpness.runs.state import progressed

#: Least seconds between two progress lines in a log.
EVERY_S = 15.0


def every_s() -> float:
    """Seconds between progress lines: ``SHARPNESS_PROGRESS_S`` when set, else :data:`EVERY_S`."""
    raw = os.environ.get("SHARPNESS_PROGRESS_S")
    try:
        return max(0.0, float(raw)) if raw is not None else EVERY_S
    except ValueError:
        return EVERY_S


def say(message: str, stream: TextIO | None = None) -> None:
    """Write ``[HH:MM:SS] message`` as one line to stderr (the job's log) and flush it."""
    progressed()
    out = stream if stream is not None else sys.stderr
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=out, flush=True)


def clock(seconds: float) -> str:
    """``H:MM:SS`` of a duration (``?`` when unknown)."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


class Progress:
    """Progress over ``total`` units (epochs, steps) from ``initial`` (a resumed run's count).

    ``update(done, **fields)`` after each unit; ``note(**fields)`` inside a long unit (a line
    only when ``every_s`` has passed); ``close()`` at the end. ``bar``: a tqdm bar instead of
    lines (default: when the stream is a terminal)."""

    def __init__(self, total: int, unit: str, *, desc: str = "", initial: int = 0,
                 bar: bool | None = None, stream: TextIO | None = None,
                 interval: float | None = None) -> None:
        self.total, self.unit, self.desc = int(total), unit, desc
        self.initial = self.done = int(initial)
        self.stream = stream if stream is not None else sys.stderr
        self.interval = every_s() if interval is None else interval
        self.start = time.monotonic()
        self.last_line = self.start  # a line inside a unit waits one interval from the start
        self.fields: dict[str, Any] = {}  # the latest value of each field (sticky)
        if bar is None:
            bar = bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar: Any = None
        if bar:
            # lazy: tqdm.auto costs ~0.1 s at import; only a terminal's bar uses it (a job's
            # log gets plain lines), and every training and eos job imports this module
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=initial, unit=unit, desc=desc or None,
                             dynamic_ncols=True, leave=False, file=self.stream)

    def line(self, fields: dict[str, Any], within: str = "", at: float | None = None) -> str:
        """The progress line for ``done`` units with ``fields`` (e.g. loss, acc, sharpness);
        ``at``: the units done as a fraction (inside a unit), for the time left."""
        elapsed = time.monotonic() - self.start
        made = (self.done if at is None else at) - self.initial
        left = elapsed / made * (self.total - self.initial - made) if made > 0 else math.nan
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total > 0 else ""
        parts = [f"{self.unit} {self.done}/{self.total}{pct}{within}"]
        parts += [f"{k} {_fmt(v)}" for k, v in fields.items()]
        parts += [f"elapsed {clock(elapsed)}", f"left ~{clock(left)}"]
        head = f"{self.desc}: " if self.desc else ""
        return head + " | ".join(parts)

    def _emit(self, fields: dict[str, Any], force: bool, within: str = "",
              at: float | None = None) -> None:
        now = time.monotonic()
        if not force and now - self.last_line < self.interval:
            return
        self.last_line = now
        say(self.line(fields, within, at), self.stream)

    def update(self, done: int, **fields: Any) -> None:
        """``done`` units are complete; ``fields`` describe the last one."""
        progressed()
        step = done - self.done
        self.done = done
        if self._bar is not None:
            self._bar.update(step)
            self._bar.set_postfix({k: _fmt(v) for k, v in fields.items()})
            return
        self.fields.update(fields)
        self._emit(self.fields, force=done >= self.total or self.done - step == self.initial)

    def note(self, within: str = "", at: float | None = None, **fields: Any) -> None:
        """Inside a unit (e.g. a step of a long epoch): a line when ``interval`` has passed.
        ``at``: the units done so far as a fraction (e.g. 2.5 epochs), for the time left."""
        progressed()
        if self._bar is None:  # the unit's own fields, then the last unit's (not kept)
            self._emit({**fields, **self.fields}, force=False,
                       within=f", {within}" if within else "", at=at)

    def close(self) -> None:
        """End the bar (lines need no closing)."""
        if self._bar is not None:
            self._bar.close()
