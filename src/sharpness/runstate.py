"""What state a run is in, told the same way for every run kind.

Two questions, one answer each, shared by the training engine (and so GLMC, the signal probe,
the eos sweeps and the bridge sweeps, which all train through it), the gradient flows and the
command-level records:

**Did it diverge?** :func:`divergence` is the one rule. A loss diverges when it is not finite,
when it exceeds ``factor`` times the run's initial loss (:data:`BLOW_UP_FACTOR` by default;
the engine's config key ``diverge_factor``), or when it exceeds an absolute ``limit`` (the
engine's ``diverge_loss``, when set). At the end of a run :func:`end_divergence` adds what a
finite blow-up leaves behind: a run whose final train loss is above its initial loss (for a
classifier trained with cross-entropy: and above ``ln C``, the uniform guess over ``C``
classes) has not trained; it is recorded as diverged at its last step. A diverged run is
a result, written with its status, step and reason into its ``final.json``, its provenance
record and its metrics, never an exception.

**Is it still running?** A run's record (``provenance.json``) names its owner (host, pid and
the pid's start time) and carries a heartbeat, renewed every :data:`HEARTBEAT_S` seconds by a
background thread (:class:`Heartbeat`) while the run works. :func:`run_state` reads a record:
a record that says ``running`` is ``interrupted`` when its owner is gone (on this host: the pid
is dead or belongs to another process) or its heartbeat is older than :data:`STALE_AFTER_S`
(any host). A run stopped by SIGTERM or Ctrl-C records ``interrupted`` itself
(:func:`install_signal_handlers` turns SIGTERM into :class:`Interrupted`); one killed by SIGKILL
keeps ``running`` in its file and is told apart by :func:`run_state`. Either way the next
invocation resumes it from its last checkpoint.

This module imports neither torch nor numpy: tables, figures and ``sharpness audit`` use it.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

#: A loss above this many times the run's initial loss is a blow-up. GD above the edge of
#: stability can pass through a large transient spike and still converge (a catapult): on the
#: quick eos settings, the MNIST-64 CNN with cross-entropy at 3 eta_c peaked at 43x its initial
#: loss at step 323 and reached its loss goal at step 517, so the factor sits well above that.
#: A real blow-up grows geometrically and passes any factor within a few steps (the MNIST-128
#: FCN with the square loss at 8 eta_c went from 1x to 1,218x in 29 steps); finite blow-ups
#: that saturate below the factor are caught at the end by :func:`end_divergence`.
BLOW_UP_FACTOR = 1000.0
#: Seconds between heartbeats of a running run's record.
HEARTBEAT_S = 30.0
#: A ``running`` record whose heartbeat is older than this is ``interrupted`` (ten beats).
STALE_AFTER_S = 10 * HEARTBEAT_S

#: Reasons :func:`divergence` and :func:`end_divergence` give.
NON_FINITE, BLOW_UP, ABOVE_LIMIT = "non_finite", "blow_up", "above_limit"
ABOVE_CHANCE, ABOVE_INITIAL = "above_chance_loss", "above_initial_loss"
#: The states :func:`run_state` returns.
STATES = ("ok", "diverged", "failed", "interrupted", "running", "unknown")


def divergence(loss: float, initial_loss: float | None = None, *,
               factor: float | None = BLOW_UP_FACTOR, limit: float | None = None) -> str | None:
    """Why ``loss`` counts as divergence, or ``None`` when it does not.

    ``non_finite`` (NaN/inf), ``blow_up`` (above ``factor * initial_loss``; skipped when either
    is ``None`` or the initial loss is not a positive finite number) or ``above_limit`` (above
    the absolute ``limit``)."""
    if not math.isfinite(loss):
        return NON_FINITE
    if (factor is not None and initial_loss is not None and math.isfinite(initial_loss)
            and initial_loss > 0 and loss > factor * initial_loss):
        return BLOW_UP
    if limit is not None and loss > limit:
        return ABOVE_LIMIT
    return None


#: how far (relative) above its initial loss (and, for a classifier, above ln C) a run must end
#: to count as blown up at the end: the measured end-of-run blow-ups sit 2-80x above their start
END_MARGIN = 0.1


def end_divergence(final_loss: float | None, initial_loss: float | None, *,
                   classifier_classes: int | None = None) -> str | None:
    """Whether a run that ended with train loss ``final_loss`` has blown up without tripping
    :func:`divergence` on the way (e.g. cross-entropy with saturated units stays finite).

    A run whose final loss is above its initial loss by more than :data:`END_MARGIN` has blown
    up (``above_initial_loss``); a few steps that end a little above where they started are
    noise, not a divergence (the claims ledger's sanity check says whether a run trained).
    ``classifier_classes``: the number of classes ``C`` of a cross-entropy classifier, which
    must moreover end above ``ln C`` (the loss of the uniform guess) by that margin
    (``above_chance_loss``), so a classifier that barely moved from an initial loss a little
    above ``ln C`` is not called diverged. ``None`` when the run is within bounds or the loss
    was not measured."""
    if final_loss is None:
        return None
    if not math.isfinite(final_loss):
        return NON_FINITE
    above_start = (initial_loss is not None and math.isfinite(initial_loss)
                   and final_loss > initial_loss * (1 + END_MARGIN))
    if classifier_classes is not None and classifier_classes > 1:
        chance = math.log(classifier_classes)
        if final_loss > chance * (1 + END_MARGIN) and (above_start or initial_loss is None):
            return ABOVE_CHANCE
        return None
    return ABOVE_INITIAL if above_start else None


# liveness ----------------------------------------------------------------------------------
class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM (see
    :func:`install_signal_handlers`); a run's record then says ``interrupted``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def install_signal_handlers() -> None:
    """Make SIGTERM raise :class:`Interrupted` in the main thread (as Ctrl-C raises
    ``KeyboardInterrupt``), so records and locks are closed on the way out. Call once, early,
    from the command line entry point; does nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    signal.signal(signal.SIGTERM, handler)


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def _process_start(pid: int) -> float | None:
    """The start time of process ``pid`` (seconds since the epoch), or None when unknown."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil ships with the pinned stack
        return None
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


def owner() -> dict[str, Any]:
    """Who runs this process: host, pid and the pid's start time (which tells a reused pid)."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "pid_started": _process_start(pid)}


def owner_alive(who: dict[str, Any]) -> bool | None:
    """Whether the process ``who`` (from :func:`owner`) still runs: ``None`` on another host."""
    if who.get("host") != socket.gethostname():
        return None
    pid = who.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    started, now = who.get("pid_started"), _process_start(pid)
    # a start time that differs: the pid was reused by another process
    return started is None or now is None or abs(started - now) <= 1.0


def heartbeat_age(record: dict[str, Any]) -> float | None:
    """Seconds since the record's last heartbeat (its start when it has none), or None."""
    stamp = record.get("heartbeat") or record.get("started")
    if not stamp:
        return None
    try:
        then = _dt.datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=_dt.UTC)
    return (_now() - then).total_seconds()


def run_state(record: dict[str, Any], *, stale_after: float = STALE_AFTER_S) -> str:
    """The state of the run a record describes: ``ok``, ``diverged``, ``failed``,
    ``interrupted`` or ``running`` (the record's own status when it is another word;
    ``unknown`` for a record without one).

    A record that says ``running`` is ``interrupted`` when its owner process is gone (same
    host) or its heartbeat is older than ``stale_after`` seconds (any host: a hung process or
    a dead node)."""
    status = record.get("status")
    if status is None:
        return "unknown"
    if status != "running":
        return str(status)
    who = record.get("owner")
    if isinstance(who, dict) and owner_alive(who) is False:
        return "interrupted"
    age = heartbeat_age(record)
    if age is not None and age > stale_after:
        return "interrupted"
    return "running"


class Heartbeat:
    """A daemon thread that calls ``beat()`` every ``interval`` seconds until stopped.

    ``beat`` renews a record's heartbeat (:class:`sharpness.provenance.RunRecord` passes a
    function that stamps and rewrites its file under its lock). An exception in ``beat`` (a
    full disk) stops the beats, never the run; the record then goes stale and reads as
    ``interrupted`` until the run ends and rewrites it."""

    def __init__(self, beat: Callable[[], None], interval: float = HEARTBEAT_S) -> None:
        self._beat = beat
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="run-heartbeat", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - a heartbeat must never kill the run
                return

    def start(self) -> Heartbeat:
        """Start beating (the first beat comes after one interval)."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop and wait for the thread (no beat is written after this returns)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def now_iso() -> str:
    """Current UTC time, ISO-8601 (the heartbeat's format)."""
    return _now().isoformat(timespec="seconds")
