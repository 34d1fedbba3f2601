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
the pid's start time) and carries a heartbeat: the time the run's own loop last made progress.
Loops report progress with :func:`progressed` (the training loop at every step, the gradient
flows at every recorded point, every progress line of :mod:`sharpness.runs.progress`), which renews
the heartbeat of every run record open in the process, written into the file by the loop's own
thread at most every :data:`HEARTBEAT_S` seconds. There is no background thread: a heartbeat
that a thread renewed while the loop hung would keep a hung run ``running`` forever.
:func:`run_state` reads a record that says ``running``:

* ``interrupted`` when its owner is gone (on this host: the pid is dead or belongs to another
  process);
* ``unknown`` when it carries no heartbeat, one that cannot be read, or one from the future
  (more than :data:`CLOCK_SKEW_S` ahead of this clock): nothing says whether it progresses;
* ``stalled`` when its owner still lives on this host but its loop has made no progress for
  :data:`STALE_AFTER_S` seconds (a hung process: stop it, then run it again to resume);
* ``interrupted`` when its heartbeat is that old and the owner is on another host (a hung
  process or a dead node, which this host cannot tell apart);
* ``running`` otherwise.

A run stopped by SIGTERM or Ctrl-C records ``interrupted`` itself
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
from typing import Any

#: A loss above this many times the run's initial loss is a blow-up. GD above the edge of
#: stability can pass through a large transient spike and still converge (a catapult): on the
#: quick eos settings, the MNIST-64 CNN with cross-entropy at 3 eta_c peaked at 43x its initial
#: loss at step 323 and reached its loss goal at step 517, so the factor sits well above that.
#: A real blow-up grows geometrically and passes any factor within a few steps (the MNIST-128
#: FCN with the square loss at 8 eta_c went from 1x to 1,218x in 29 steps); finite blow-ups
#: that saturate below the factor are caught at the end by :func:`end_divergence`.
BLOW_UP_FACTOR = 1000.0
#: Least seconds between two writes of a running run's heartbeat into its record.
HEARTBEAT_S = 30.0
#: A ``running`` record whose loop has made no progress for this long is ``stalled`` (its
#: owner lives on this host) or ``interrupted`` (another host). Long enough for the slowest
#: single step the pipeline takes between two progress reports (an evaluation pass, a
#: Lanczos estimate of the sharpness, a checkpoint write).
STALE_AFTER_S = 20 * HEARTBEAT_S
#: A heartbeat more than this many seconds ahead of this host's clock is impossible
#: (``unknown``): no clock of a working cluster is that far off.
CLOCK_SKEW_S = 120.0

#: Reasons :func:`divergence` and :func:`end_divergence` give.
NON_FINITE, BLOW_UP, ABOVE_LIMIT = "non_finite", "blow_up", "above_limit"
ABOVE_CHANCE, ABOVE_INITIAL = "above_chance_loss", "above_initial_loss"
#: The states :func:`run_state` returns.
STATES = ("ok", "diverged", "failed", "interrupted", "stalled", "running", "unknown")


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
    try:  # lazy and optional: psutil is not a declared dependency (the pinned stack has it)
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
    """Seconds since the record's heartbeat (negative: a heartbeat from the future), or
    ``None`` when it has none or it cannot be read. A record's start time is not a heartbeat:
    a record without one says nothing about the run's progress."""
    stamp = record.get("heartbeat")
    if not stamp or not isinstance(stamp, str):
        return None
    try:
        then = _dt.datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=_dt.UTC)
    return (_now() - then).total_seconds()


def liveness(record: dict[str, Any], *, stale_after: float = STALE_AFTER_S
             ) -> tuple[str, str]:
    """``(state, why)`` of a record that says ``running`` (see the module docstring): the
    state :func:`run_state` returns and the reason in words."""
    who = record.get("owner") if isinstance(record.get("owner"), dict) else None
    alive = owner_alive(who) if who is not None else None
    where = (f"pid {who.get('pid')} on {who.get('host')}" if who is not None
             else "no owner recorded")
    if alive is False:
        return "interrupted", f"its owner ({where}) is gone"
    age = heartbeat_age(record)
    beat = record.get("heartbeat")
    if age is None:
        what = "no heartbeat" if not beat else f"a heartbeat that cannot be read ({beat!r})"
        return "unknown", (f"it carries {what}, so nothing says whether its loop still makes "
                           f"progress ({where})")
    if age < -CLOCK_SKEW_S:
        return "unknown", (f"its heartbeat {beat} lies {-age:.0f} s in the future of this "
                           f"host's clock: impossible, so nothing says whether it progresses "
                           f"({where})")
    if age > stale_after:
        if alive:
            return "stalled", (f"its owner ({where}) still lives but its loop has made no "
                               f"progress for {age:.0f} s (last at {beat}): it hangs")
        return "interrupted", (f"its loop has made no progress for {age:.0f} s (last at "
                               f"{beat}) and its owner ({where}) cannot be checked from here")
    return "running", f"its loop made progress {max(age, 0.0):.0f} s ago ({where})"


def run_state(record: dict[str, Any], *, stale_after: float = STALE_AFTER_S) -> str:
    """The state of the run a record describes: ``ok``, ``diverged``, ``failed``,
    ``interrupted``, ``stalled``, ``running`` or ``unknown`` (the record's own status when it
    is another word; ``unknown`` for a record without one).

    A record that says ``running`` is read by :func:`liveness`: ``interrupted`` when its owner
    is gone or (another host) its loop has made no progress for ``stale_after`` seconds,
    ``stalled`` when its owner lives here but its loop has not progressed for that long,
    ``unknown`` when it has no heartbeat or an impossible one (from the future)."""
    status = record.get("status")
    if status is None:
        return "unknown"
    if status != "running":
        return str(status)
    return liveness(record, stale_after=stale_after)[0]


# progress reports -> heartbeats ----------------------------------------------------------
_TRACKED: list[Any] = []
_TRACKED_LOCK = threading.Lock()


def track(record: Any) -> None:
    """Renew ``record``'s heartbeat (its ``progress()`` method) whenever a loop of this
    process reports progress (:class:`sharpness.runs.run_record.RunRecord` while it is open)."""
    with _TRACKED_LOCK:
        _TRACKED.append(record)


def untrack(record: Any) -> None:
    """Stop renewing ``record``'s heartbeat (the run ended)."""
    with _TRACKED_LOCK:
        if record in _TRACKED:
            _TRACKED.remove(record)


def progressed() -> None:
    """The calling loop made progress (a training step, a flow point, a progress line): renew
    the heartbeat of every run record open in this process. Cheap (a clock read per record;
    the file is written at most every :data:`HEARTBEAT_S` seconds); never raises, since a
    failed write of a heartbeat (a full disk) must not stop the run: the record then reads
    as no longer progressing until the run ends and rewrites it."""
    with _TRACKED_LOCK:
        records = list(_TRACKED)
    for record in records:
        try:
            record.progress()
        except Exception:  # noqa: BLE001 - a heartbeat must never kill the run
            continue


def now_iso() -> str:
    """Current UTC time, ISO-8601 (the heartbeat's format)."""
    return _now().isoformat(timespec="seconds")
