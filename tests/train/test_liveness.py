"""A run that stops making progress is not `running`: a run's heartbeat comes from
its own loop's progress, never from a thread that beats while the loop hangs; a record with no
heartbeat or an impossible one (from the future) is `unknown`, and `sharpness audit` says so."""

from __future__ import annotations

import datetime
import signal
import threading
import time

import pytest

from sharpness.io import atomic_write_json, read_json
from sharpness.runs import state as runstate
from sharpness.runs.audit import audit_report
from sharpness.runs.run_record import RunRecord
from sharpness.runs.state import owner, run_state


def test_a_run_record_starts_no_thread(tmp_path):
    """Nothing beats on the run's behalf: a RunRecord adds no thread to the process."""
    before = {t.ident for t in threading.enumerate()}
    with RunRecord(tmp_path / "run", params={"lr": 0.1}, seed=0):
        during = {t.name for t in threading.enumerate() if t.ident not in before}
    assert during == set()


def test_the_heartbeat_moves_only_with_the_loops_progress(tmp_path, monkeypatch):
    """While the loop hangs (no progress reported) the record's heartbeat stays where it was,
    however long; each step the loop reports renews it (written at most every HEARTBEAT_S).
    The hang is made without waiting: the record is opened with a heartbeat stamped 5 s ago
    (what a real 5 s hang leaves), and nothing but the loop's report may move it."""
    monkeypatch.setattr(runstate, "HEARTBEAT_S", 0.0)  # write every report, for the test
    path = tmp_path / "run" / "provenance.json"
    with monkeypatch.context() as hung:
        hung.setattr(runstate, "now_iso", lambda: _now(-5.0))
        record = RunRecord(tmp_path / "run", params={"lr": 0.1}, seed=0).__enter__()
    try:
        first = read_json(path)["heartbeat"]
        assert run_state(read_json(path), stale_after=2.0) == "stalled"  # alive, no progress
        runstate.progressed()  # a training step
        renewed = read_json(path)
        assert renewed["heartbeat"] > first and run_state(renewed, stale_after=2.0) == "running"
        assert renewed["id"] == read_json(path)["id"]
    finally:
        record.__exit__(None, None, None)


def _now(offset_s: float = 0.0) -> str:
    then = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=offset_s)
    return then.isoformat(timespec="seconds")


def test_no_heartbeat_or_an_impossible_one_is_unknown():
    elsewhere = {"host": "elsewhere", "pid": 1}
    assert run_state({"status": "running", "owner": elsewhere}) == "unknown"
    assert run_state({"status": "running", "owner": elsewhere,
                      "started": "2020-01-01T00:00:00+00:00"}) == "unknown"  # not a beat
    assert run_state({"status": "running", "owner": owner()}) == "unknown"
    assert run_state({"status": "running", "owner": elsewhere,
                      "heartbeat": _now(24 * 3600)}) == "unknown"  # from the future
    assert run_state({"status": "running", "owner": elsewhere,
                      "heartbeat": "yesterday"}) == "unknown"
    assert run_state({"status": "running", "owner": elsewhere, "heartbeat": _now()}) == \
        "running"
    assert run_state({"status": "running", "owner": elsewhere, "heartbeat": _now(5)}) == \
        "running"  # a few seconds of clock skew between hosts is possible
    dead = {**owner(), "pid": 2**22 + 12345}
    assert run_state({"status": "running", "owner": dead}) == "interrupted"  # known dead


@pytest.mark.parametrize(("ahead_s", "why"), [(None, "no heartbeat"),
                                              (24 * 3600, "in the future")],
                         ids=["none", "future"])
def test_audit_says_unknown_and_why(tmp_path, ahead_s, why):
    with RunRecord(tmp_path / "run", params={"lr": 0.1}, seed=0) as rec:
        runstate.untrack(rec)
        record = read_json(rec.path)
    record.pop("heartbeat")
    record["owner"] = {"host": "elsewhere", "pid": 1}
    record["status"] = "running"
    if ahead_s is not None:
        record["heartbeat"] = _now(ahead_s)
    from sharpness.runs.provenance import content_id
    from sharpness.runs.signing import sign

    record["id"] = content_id(record)  # a record as a killed run leaves it, not an edited one
    atomic_write_json(tmp_path / "run" / "provenance.json", sign(record))
    lines, problems = audit_report(tmp_path / "run")
    assert "status:   unknown" in "\n".join(lines)
    assert len(problems) == 1 and "UNKNOWN" in problems[0] and why in problems[0], problems


@pytest.mark.workflow  # hangs, then kills, a training process
def test_a_training_process_whose_loop_hangs_is_stalled_not_running(tmp_path):
    """The case: a training process whose main thread hangs (here: in a metrics hook,
    at its first logged row). Its record's heartbeat stops moving, so it reads `stalled` (its
    owner still lives) and `audit` says so; killed, it reads `interrupted`."""
    from tests.train.test_run_states import SLOW, _start, _wait_for

    out = tmp_path / "run"
    proc = _start(SLOW, out, tmp_path / "err.log", sleep=3600)  # the first row never returns
    try:
        _wait_for(lambda: (out / "provenance.json").exists(), proc, "its record")
        time.sleep(2.5)
        record = read_json(out / "provenance.json")
        assert record["status"] == "running" and record["owner"]["pid"] == proc.pid
        assert run_state(record, stale_after=2.0) == "stalled"
        time.sleep(1.0)
        assert read_json(out / "provenance.json")["heartbeat"] == record["heartbeat"]
        state, why = runstate.liveness(record, stale_after=2.0)
        assert state == "stalled" and f"pid {proc.pid}" in why and "no progress" in why
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert run_state(read_json(out / "provenance.json"), stale_after=2.0) == "interrupted"
