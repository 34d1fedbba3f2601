"""A run's status tells the truth: one divergence rule for every run kind, killed runs read as
``interrupted`` (never ``running`` for good) and still resume, and progress shows in the log.

The cases: GLMC at lr 1e4 reaching loss 1.5e18 and ``sharpness train`` at lr 30 reaching train
loss 16 from 2.3 end ``diverged``, not ``ok``; an eos run's ``final.json`` and its sweep row
say the same status and step; a SIGTERM or SIGKILL leaves ``provenance.json`` at
``interrupted``, not ``running``; a training log holds a line per progress step, not one at
the end.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sharpness.io import read_json, read_jsonl
from sharpness.runs.seal import damage
from sharpness.runs.state import (
    BLOW_UP_FACTOR,
    divergence,
    end_divergence,
    owner,
    run_state,
)
from sharpness.train import TrainHooks, train
from sharpness.train.status import END_MIN_STEPS, final_check

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread

REPO = Path(__file__).resolve().parents[2]
DATA = str(REPO / "data")
# a tiny CNN classifier: a few seconds at most
MINI = {"dataset": "mnist_embedded", "data_root": DATA, "model": "cnn",
        "model_kwargs": {"channels": 4}, "train_size": 128, "test_size": 60, "epochs": 2,
        "batch_size": 64, "lr": 0.05, "device": "cpu", "checkpoint_every": 1}
# full-batch GD, the square loss (an eos run)
FULL = {"dataset": "mnist_embedded", "data_root": DATA, "train_size": 64, "test_size": 32,
        "model": "fcn", "model_kwargs": {"hidden": 16, "depth": 2}, "optimizer": "sgd",
        "momentum": 0.0, "weight_decay": 0.0, "lr": 0.05, "mode": "fullbatch", "loss": "mse",
        "max_steps": 40, "checkpoint_every": 5, "log_every": 1, "eval_every": 0,
        "device": "cpu", "seed": 1}


# the rule ------------------------------------------------------------------------------------
def test_blow_up_rule_is_one_function_with_a_stated_factor():
    assert divergence(float("nan"), 2.3) == "non_finite"
    assert divergence(float("inf")) == "non_finite"
    assert divergence(BLOW_UP_FACTOR * 2.3 * 1.01, 2.3) == "blow_up"
    assert divergence(BLOW_UP_FACTOR * 2.3 * 0.99, 2.3) is None  # a catapult spike is allowed
    assert divergence(50.0, 2.3, factor=10.0) == "blow_up"  # configurable
    assert divergence(50.0, 2.3, factor=None) is None
    assert divergence(50.0, None) is None  # no initial loss yet: only NaN/inf and the limit
    assert divergence(50.0, None, limit=10.0) == "above_limit"
    # at the end: above the start (and, for a classifier, above ln C) has not trained
    assert end_divergence(16.0, 2.3, classifier_classes=10) == "above_chance_loss"
    assert end_divergence(2.305, 2.31, classifier_classes=10) is None  # barely moved
    assert end_divergence(1.9, 2.3, classifier_classes=10) is None
    assert end_divergence(0.6, 0.5) == "above_initial_loss"
    assert end_divergence(0.54, 0.5) is None  # within END_MARGIN: noise, not a blow-up
    assert end_divergence(0.4, 0.5) is None
    assert end_divergence(None, 0.5) is None
    ok = {"status": "ok", "reason": "completed"}
    assert final_check(ok, 0, 99.0, 2.3, loss_kind="ce", num_classes=10) is ok  # no step taken
    # too short to tell a blow-up from sampling noise at the end (the per-step rule still runs)
    assert final_check(ok, END_MIN_STEPS - 1, 16.0, 2.3, loss_kind="ce", num_classes=10) is ok
    ended = final_check(ok, 12, 16.0, 2.3, loss_kind="ce", num_classes=10)
    assert ended["status"] == "diverged" and ended["diverged_step"] == 12
    assert ended["diverged_why"] == "above_chance_loss"


def _agree(run_dir: Path) -> dict:
    """final.json, provenance.json and metrics.jsonl say the same divergence; return final."""
    final = read_json(run_dir / "final.json")
    prov = read_json(run_dir / "provenance.json")
    assert final["status"] == prov["status"] == "diverged"
    step = final["diverged_step"]
    assert isinstance(step, int) and prov["diverged_step"] == step
    assert final["diverged_why"] in ("non_finite", "blow_up", "above_chance_loss",
                                     "above_initial_loss", "above_limit")
    last = read_jsonl(run_dir / "metrics.jsonl")[-1]
    assert last["kind"] == "diverged" and last["step"] == step
    assert run_state(prov) == "diverged"
    return final


# every run kind blows up the same way --------------------------------------------------------
def test_blow_up_train_at_lr_30_is_diverged(tmp_path):
    """A `sharpness train` at lr 30 (it ended ok at train loss 16 from 2.3)."""
    from sharpness.cli import main

    assert main(["train", "--config", json.dumps({**MINI, "lr": 30.0}), "--out",
                 str(tmp_path), "--no-progress"]) == 0
    final = _agree(tmp_path)
    loss = final["final_train_loss"]
    assert loss is None or loss > math.log(10)


def test_blow_up_saturated_classifier_is_caught_at_the_end(tmp_path):
    """A finite blow-up under the factor (cross-entropy saturates): the end rule catches it."""
    final = train({**MINI, "lr": 30.0, "diverge_factor": None, "batch_size": 16}, tmp_path,
                  progress=False)
    # 16 steps (the end rule needs END_MIN_STEPS); measured at 4 steps: 6.6 from 2.4 (with the
    # factor, 40,955 at step 1: blow_up)
    assert final["diverged_why"] == "above_chance_loss"
    assert final["diverged_step"] == final["steps"] > 0
    assert math.log(10) < final["final_train_loss"] < BLOW_UP_FACTOR * final["initial_loss"]
    _agree(tmp_path)


def test_blow_up_fullbatch_eos_run_row_matches_its_records(tmp_path):
    """An eos GD run far above eta_c: its final.json, provenance and sweep row all say diverged
    with the same step (never a row that says diverged with step None beside a run that says
    ok)."""
    from sharpness.eos.sweep import run_row

    final = train({**FULL, "lr": 40.0}, tmp_path, progress=False)
    _agree(tmp_path)
    row = run_row(final, 40.0, 50.0, 0.8, final["initial_loss"], tmp_path)
    assert row["status"] == "diverged" and row["diverged"] and not row["converged"]
    assert row["diverged_step"] == final["diverged_step"]


def test_blow_up_glmc_at_lr_1e4_is_diverged(tmp_path):
    """A GLMC at lr 1e4 (it ended ok at loss 1.5e18)."""
    from sharpness.lesam.glmc import run_glmc

    final = run_glmc({**MINI, "lr": 1e4, "glmc": {"imbalance_factor": 4, "proj_dim": 8}},
                     tmp_path, progress=False)
    assert final["status"] == "diverged"
    _agree(tmp_path)


def test_blow_up_signal_probe_is_diverged(tmp_path):
    from sharpness.lesam.signal import run_signal

    run_signal({**MINI, "lr": 1e4, "optimizer": "sam", "opt_hparams": {"rho": 0.05}},
               tmp_path, probe_every=1, progress=False)
    _agree(tmp_path)


def test_blow_up_tables_count_diverged_runs(tmp_path):
    """The lesam tables read each run's final status: a diverged run is left out and named."""
    from sharpness.lesam.report import mean_std, status_counts

    train({**MINI, "lr": 30.0}, tmp_path / "bad", progress=False)
    train({**MINI, "epochs": 1}, tmp_path / "good", progress=False)
    finals = [read_json(tmp_path / d / "final.json") for d in ("bad", "good")]
    ok = [f["final_test_acc"] for f in finals if f["status"] == "ok"]
    assert status_counts(finals) == {"diverged": 1, "failed": 0}
    assert mean_std(ok, **status_counts(finals))[2].endswith("(n=1; 1 diverged)")


# killed runs ---------------------------------------------------------------------------------
def _start(cfg: dict, out: Path, log: Path, sleep: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'src'}", "OMP_NUM_THREADS": "1",
           "SHARPNESS_TEST_ROW_SLEEP": str(sleep), "SHARPNESS_PROGRESS_S": "0"}
    cmd = [sys.executable, "-m", "sharpness.cli", "train", "--config", json.dumps(cfg),
           "--out", str(out), "--threads", "1"]
    with open(log, "w") as err:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)


def _wait_for(pred, proc: subprocess.Popen, what: str, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc {proc.returncode}) before {what}")
        if time.monotonic() > end:
            proc.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


SLOW = {**FULL, "metrics_fn": "tests.train.run_helpers:slow_rows"}


@pytest.mark.workflow  # kills a training process
def test_interrupted_by_sigterm_says_so_in_its_record(tmp_path):
    out = tmp_path / "run"
    proc = _start(SLOW, out, tmp_path / "err.log", sleep=0.1)
    _wait_for(lambda: (out / "checkpoint.pt").exists(), proc, "its first checkpoint")
    running = read_json(out / "provenance.json")
    assert running["status"] == "running" and run_state(running) == "running"
    assert running["owner"]["pid"] == proc.pid and running["owner"]["host"] == owner()["host"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    record = read_json(out / "provenance.json")
    assert record["status"] == "interrupted" and "SIGTERM" in record["error"]
    assert run_state(record) == "interrupted"
    assert not (out / "final.json").exists()
    assert "interrupted" in (tmp_path / "err.log").read_text()


@pytest.mark.workflow  # kills a training process
def test_interrupted_by_sigkill_is_detected_and_the_run_resumes(tmp_path):
    out = tmp_path / "run"
    proc = _start(SLOW, out, tmp_path / "err.log", sleep=0.1)
    # a checkpoint counts once its hash is recorded (a kill between the two writes loses it:
    # an unsealed checkpoint is never loaded, the run starts over)
    _wait_for(lambda: damage(out, "checkpoint.pt", require=True) is None, proc,
              "its first sealed checkpoint")
    proc.kill()
    proc.wait(timeout=60)
    record = read_json(out / "provenance.json")
    assert record["status"] == "running"  # nobody could write anything
    assert run_state(record) == "interrupted"  # its owner's pid is dead
    # resumed from its checkpoint (same hooks: same cache key), it ends as an uninterrupted
    # run does
    from tests.train.run_helpers import slow_rows

    hooks = TrainHooks(metrics=slow_rows)
    final = train(SLOW, out, hooks=hooks, progress=False)
    prov = read_json(out / "provenance.json")
    assert prov["status"] == "ok" and prov["resumed_from_step"] >= 5
    ref = train(SLOW, tmp_path / "ref", hooks=hooks, progress=False)
    assert final["final_train_loss"] == ref["final_train_loss"]
    assert (out / "metrics.jsonl").read_bytes() == (tmp_path / "ref/metrics.jsonl").read_bytes()


def test_interrupted_when_the_heartbeat_is_stale_on_another_host():
    record = {"status": "running", "owner": {"host": "elsewhere", "pid": 1},
              "heartbeat": "2020-01-01T00:00:00+00:00"}
    assert run_state(record) == "interrupted"
    fresh = {**record, "heartbeat": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())}
    assert run_state(fresh) == "running"
    assert run_state({**fresh, "owner": {**owner(), "pid": 2**22 + 12345}}) == "interrupted"
    assert run_state({**fresh, "owner": owner()}) == "running"  # this very process
    assert run_state({"status": "ok"}) == "ok"


# progress ------------------------------------------------------------------------------------
@pytest.mark.workflow  # watches a training process
def test_progress_lines_reach_a_log_before_the_run_ends(tmp_path):
    """stderr redirected to a file (as every rule does): progress lines with the epoch, loss,
    accuracy, elapsed and remaining time appear while the run still runs."""
    out, log = tmp_path / "run", tmp_path / "train.log"
    cfg = {**MINI, "epochs": 4, "log_every": 1, "metrics_fn": "tests.train.run_helpers:slow_rows"}
    proc = _start(cfg, out, log, sleep=0.05)
    _wait_for(lambda: "epoch 1/4" in log.read_text(), proc, "a progress line")
    assert proc.poll() is None and not (out / "final.json").exists()
    assert proc.wait(timeout=120) == 0
    lines = [x for x in log.read_text().splitlines() if "epoch" in x and "/4" in x]
    assert any("epoch 4/4 (100%)" in x for x in lines)
    for field in ("train_loss", "train_acc", "elapsed", "left ~"):
        assert all(field in x for x in lines if "step" not in x), field


def test_progress_lines_are_throttled_and_keep_the_last_numbers():
    import io

    from sharpness.runs.progress import Progress

    out = io.StringIO()
    p = Progress(10, "epoch", desc="train x", initial=2, stream=out, interval=3600.0)
    for done in range(3, 11):
        p.note("step 5/9", loss=0.5)
        p.update(done, train_loss=1.0 / done, sharpness=None if done < 10 else 4.0)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the first unit after the start (a resumed run: 3) and the last
    assert "train x: epoch 3/10 (30%) | train_loss 0.3333 | sharpness -" in lines[0]
    assert "epoch 10/10 (100%) | train_loss 0.1 | sharpness 4 | elapsed 0:00:00" in lines[1]
    every = io.StringIO()
    q = Progress(4, "step", stream=every, interval=0.0)
    q.note("inside", loss=2.0)
    q.update(1, loss=1.0)
    assert [x.split("] ", 1)[1].split(" | elapsed")[0] for x in every.getvalue().splitlines()] \
        == ["step 0/4 (0%), inside | loss 2", "step 1/4 (25%) | loss 1"]
