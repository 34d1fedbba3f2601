"""Fault tolerance of the whole workflow: a second invocation is locked out, a killed run
resumes and ends with the same numbers as a clean run."""

from __future__ import annotations

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
