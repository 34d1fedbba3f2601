"""Fault tolerance of the whole workflow: a second invocation is locked out, a killed run
resumes and ends with the same numbers as a clean run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.pipeline.helpers import copy_workflow, snakemake, write_config

pytestmark = pytest.mark.workflow  # runs the workflow, kills it and resumes

FIGURE = "figures/minorfirst/l1_maxmargin.pdf"
# the catalog item l1_maxmargin with one (alpha, rho): the kill comes within a poll (0.1 s) of
# the job's start and the resumed run is held (SIGSTOP) as soon as it locks, so the job needs
# only to outlast a poll: 12,000 steps, a second or two of compute (recorded as often as before:
# 100 rows)
SETTINGS = {"minorfirst": {"l1_maxmargin": {"alphas": [1.0], "rhos": [0.1], "steps": 12000,
                                            "record_every": 120}}}
RUN = "results/minorfirst/l1_maxmargin"


def _start(bin_dir: Path, work: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.Popen([str(bin_dir / "snakemake"), FIGURE, "--cores", "1", "--configfile",
                             "test-config.yaml"], cwd=work, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear in {timeout} s")
        time.sleep(0.1)


def test_lock_then_kill_then_resume_equals_clean_run(tmp_path, repo, bin_dir):
    killed = copy_workflow(repo, (tmp_path / "killed").resolve().mkdir() or tmp_path / "killed")
    clean = copy_workflow(repo, (tmp_path / "clean").resolve().mkdir() or tmp_path / "clean")
    for work in (killed, clean):
        write_config(work, SETTINGS)

    first = _start(bin_dir, killed)
    try:
        # hard-kill the whole pipeline, job included (as the OOM killer or a lost node would),
        # once the run job has started
        _wait_for(killed / RUN / "provenance.json")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=120)
    assert not (killed / FIGURE).exists()
    assert not (killed / RUN / "data.npz").exists()

    # a hard kill leaves Snakemake's lock behind: release it as Snakemake says, then rerun
    snakemake(bin_dir, killed, "--unlock")
    # the killed job left none of its outputs, so the rerun plans it again (no
    # --rerun-incomplete needed; the default profile no longer sets it)
    resumed = _start(bin_dir, killed)
    try:
        _wait_for(killed / ".snakemake/locks/0.output.lock")
        # hold the resumed run (job included) while it owns the lock, so the second
        # invocation meets the lock however fast the job or however slow the DAG parse is
        os.killpg(resumed.pid, signal.SIGSTOP)
        try:
            second = snakemake(bin_dir, killed, FIGURE, "--cores", "1", "--configfile",
                               "test-config.yaml", check=False)
        finally:
            os.killpg(resumed.pid, signal.SIGCONT)
        assert second.returncode != 0
        assert "cannot be locked" in (second.stdout + second.stderr)
    finally:
        out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out
    snakemake(bin_dir, clean, FIGURE, "--cores", "1", "--configfile", "test-config.yaml")

    rel = f"{RUN}/data.npz"
    with np.load(killed / rel) as a, np.load(clean / rel) as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key])
    csv = FIGURE.replace(".pdf", ".csv")
    assert (killed / csv).read_text() == (clean / csv).read_text()


# one tiny eos setting, one learning rate (0.5 eta_c: about a thousand GD steps to the loss
# goal, a few seconds) with a checkpoint every 20 steps, so the kill lands mid-run
EOS_SWEEP = "results/eos/settings/cut/sweep.json"
EOS_SETTINGS = {"eos": {"settings": {"cut": {
    "label": "cut", "dataset": "mnist_embedded", "train_size": 32, "test_size": 50,
    "model": "fcn", "model_kwargs": {"hidden": 8, "activation": "tanh", "alpha": 0.3},
    "loss_goal": 0.05, "max_steps": 3000, "sharpness_every": 400, "log_every": 20,
    "checkpoint_every": 20, "lr_factors": [0.5], "device": "cpu",
    "measures": {"trace_samples": 2, "ascent_steps": 1, "avg_samples": 2},
}}}}


def _eos(bin_dir: Path, work: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.Popen([str(bin_dir / "snakemake"), EOS_SWEEP, "--cores", "1",
                             "--configfile", "test-config.yaml", *args], cwd=work, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _first_checkpoint(runs: Path, timeout: float = 90.0) -> None:
    """Wait until a run's first checkpoint is written and sealed (its hash recorded in the
    folder's record): a kill between the two leaves a checkpoint the run rightly refuses to
    resume from, which is not the case this test is about."""
    from sharpness.runs.seal import damage

    deadline = time.monotonic() + timeout
    while not any(damage(p.parent, p.name) is None for p in runs.glob("lr_*/checkpoint.pt")):
        if time.monotonic() > deadline:
            raise AssertionError(f"no sealed checkpoint under {runs} in {timeout} s")
        time.sleep(0.02)


def test_a_cut_eos_setting_resumes_its_run_from_the_checkpoint(tmp_path, repo, bin_dir):
    """The setting's run folders are not workflow outputs (only sweep.json is), so a hard
    kill after the run's first checkpoint leaves them; `--unlock` and `--rerun-incomplete`
    then resume the run from its checkpoint, and the sweep equals an uncut one's."""
    killed = copy_workflow(repo, (tmp_path / "killed").resolve().mkdir() or tmp_path / "killed")
    clean = copy_workflow(repo, (tmp_path / "clean").resolve().mkdir() or tmp_path / "clean")
    for work in (killed, clean):
        write_config(work, EOS_SETTINGS)
    runs = killed / "results/eos/settings/cut/runs"
    first = _eos(bin_dir, killed)
    try:
        _first_checkpoint(runs)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=120)
    (run,) = runs.glob("lr_*")
    assert (run / "checkpoint.pt").is_file() and not (run / "final.json").exists(), \
        "the run finished before the kill: nothing to resume"

    snakemake(bin_dir, killed, "--unlock")
    resumed = _eos(bin_dir, killed, "--rerun-incomplete")
    out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out
    uncut = _eos(bin_dir, clean)
    out, _ = uncut.communicate(timeout=600)
    assert uncut.returncode == 0, out

    prov = json.loads((run / "provenance.json").read_text())
    assert prov["status"] == "ok" and prov["resumed_from_step"] >= 20
    rel = run.relative_to(killed)
    assert (run / "final.json").read_bytes() == (clean / rel / "final.json").read_bytes()
    # the trajectory is the uncut one's, bit for bit, sharpness included: the checkpoint
    # holds the Lanczos warm start (sharpness.eos.sweep.SharpnessHook)
    assert (run / "metrics.jsonl").read_bytes() == (clean / rel / "metrics.jsonl").read_bytes()
    a, b = (json.loads((w / EOS_SWEEP).read_text()) for w in (killed, clean))
    for sweep in (a, b):
        sweep["flow"].pop("wall_s")  # how long the flow took
        for row in sweep["rows"]:
            row.pop("run_id")  # the run's record id: it names the resumed step
    assert a == b
