"""One writer per run folder: a second writer waits or stops naming the holder, a
killed holder's lock is taken over, and two `sharpness train` into one folder never
interleave their rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sharpness.io import read_jsonl
from sharpness.runs.lock import RunFolderBusy, lock_path, read_holder, run_lock

REPO = Path(__file__).resolve().parents[1]
# hold the lock of argv[1] until argv[2] exists (a file the test creates), then exit
HOLDER = """
import sys, time
from pathlib import Path
from sharpness.runs.lock import run_lock
with run_lock(sys.argv[1]):
    Path(sys.argv[1] + ".held").write_text("yes")
    while not Path(sys.argv[2]).exists():
        time.sleep(0.05)
"""


def _hold(folder: Path, release: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(release)],
                            text=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not Path(f"{folder}.held").exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the holder did not take the lock"
        time.sleep(0.05)
    return proc


@pytest.mark.workflow  # a lock-holding process
def test_second_writer_stops_naming_the_holder_pid(tmp_path):
    run = tmp_path / "run"
    holder = _hold(run, tmp_path / "release")
    try:
        assert read_holder(run)["pid"] == holder.pid
        with pytest.raises(RunFolderBusy, match=rf"being written by pid {holder.pid} on "), \
                run_lock(run, wait=0):
            pass
        with pytest.raises(RunFolderBusy, match=rf"still being written by pid {holder.pid}"), \
                run_lock(run, wait=0.3):
            pass
    finally:
        (tmp_path / "release").write_text("go")
        holder.wait(timeout=30)
    assert lock_path(run) == tmp_path / ".run.lock"  # beside the folder, not inside it
    assert not run.exists()
    with run_lock(run, wait=0):  # free again once the holder has exited
        assert read_holder(run)["pid"] == os.getpid()
    assert read_holder(run) is None  # a clean release leaves no holder named


@pytest.mark.workflow  # a lock-holding process
def test_second_writer_waits_with_a_log_line(tmp_path, caplog):
    run = tmp_path / "run"
    holder = _hold(run, tmp_path / "release")
    subprocess.Popen([sys.executable, "-c", "import time, pathlib, sys; time.sleep(0.6); "
                      "pathlib.Path(sys.argv[1]).write_text('go')", str(tmp_path / "release")])
    start = time.monotonic()
    with caplog.at_level("WARNING", logger="sharpness.runs.lock"), run_lock(run):
        waited = time.monotonic() - start
        assert holder.wait(timeout=30) == 0  # the holder had finished before we got it
    assert waited > 0.4
    text = caplog.text
    assert f"is being written by pid {holder.pid}" in text and "waiting" in text
    assert "the lock is free" in text


@pytest.mark.workflow  # kills a lock-holding process
def test_lock_of_a_killed_holder_is_taken_over(tmp_path, caplog):
    run = tmp_path / "run"
    holder = _hold(run, tmp_path / "never")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    with caplog.at_level("WARNING", logger="sharpness.runs.lock"), run_lock(run, wait=0):
        pass
    assert f"taking over the lock left by pid {holder.pid}" in caplog.text


def test_lock_is_reentrant_in_one_process(tmp_path):
    with run_lock(tmp_path / "r", wait=0), run_lock(tmp_path / "r", wait=0):
        assert read_holder(tmp_path / "r")["pid"] == os.getpid()


# about a second of training: long enough for the two processes to overlap
TINY = {"dataset": "mnist_embedded", "data_root": str(REPO / "data"), "train_size": 256,
        "test_size": 32, "model": "fcn", "model_kwargs": {"hidden": 32, "depth": 2},
        "optimizer": "sgd", "lr": 0.1, "epochs": 4, "batch_size": 16, "seed": 0}


@pytest.mark.slow  # two `sharpness train` processes: about 10 s of CPU on an idle machine
def test_two_concurrent_trainings_into_one_folder_do_not_interleave(tmp_path):
    """Both exit 0; the second waits for the first and reuses its finished run, so
    metrics.jsonl holds every epoch once (it held each twice before the lock)."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "sharpness.cli", "train", "--config", json.dumps(TINY),
           "--out", str(out), "--threads", "1"]
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    procs = [subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    epochs = [r["epoch"] for r in read_jsonl(out / "metrics.jsonl") if r.get("kind") == "epoch"]
    assert epochs == sorted(set(epochs)) and len(epochs) >= TINY["epochs"], epochs
    waited = [err for _, err in results if "waiting for it to finish" in err]
    assert len(waited) == 1, results  # exactly one of them met the other's lock
    # both report the same finished run
    assert results[0][0].split("status=")[1] == results[1][0].split("status=")[1]
