"""Concurrent `snakemake` invocations on one folder lose nothing.

Reproduced on b81c16d: invocation A runs a job (an eos setting); B, on another target,
finishes, and Snakemake 9.27 removes the whole `.snakemake/locks/` folder, A's lock included;
C then asks for A's target and, because the default profile set `rerun-incomplete`, deleted
A's run folders while A wrote them. Here A is frozen (SIGSTOP) once its job has written into
its folders, so the order of events is fixed; C must leave A's files alone, A must finish,
and every output must equal a serial build's. The setting's declared output is its
`sweep.json` (written last), not its folders, so C plans the job again and its copy waits
for A's run-folder lock (sharpness.runs.lock); A is let go once C's copy waits, and C's copy
then reuses what A finished.
"""

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
from tests.pipeline.test_reruns import OVERRIDES

pytestmark = pytest.mark.workflow  # runs the workflow in two processes at once

EOS_FIG = "figures/eos/fig_phase.pdf"  # A's and C's target (one eos setting, `tiny`)
MF_FIG = "figures/minorfirst/l1_maxmargin.pdf"  # B's target
SETTING = "results/eos/settings/tiny"
SWEEP = f"{SETTING}/sweep.json"  # the eos_setting job's declared output
LOG = "logs/eos/setting_tiny.log"  # the job's log (both copies write it)
ARGS = ("--cores", "1", "--configfile", "test-config.yaml")


def _workdir(repo: Path, path: Path) -> Path:
    path.mkdir()
    copy_workflow(repo, path)
    (path / "data").symlink_to(repo / "data")
    write_config(path, OVERRIDES)
    return path


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (inode, mtime_ns)}`` of every file under ``folder``: a file deleted
    and written again has a new inode or mtime."""
    return {str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


def _numbers(obj):
    """``obj`` without the fields that are not functions of the inputs (times, paths)."""
    if isinstance(obj, dict):
        return {k: _numbers(v) for k, v in obj.items() if "wall" not in k and k != "run"}
    if isinstance(obj, list):
        return [_numbers(v) for v in obj]
    return obj


@pytest.mark.slow  # six snakemake invocations and two eos settings: about a minute of CPU
def test_concurrent_invocations_never_delete_a_running_job(tmp_path, repo, bin_dir):
    work = _workdir(repo, tmp_path / "concurrent")
    serial = _workdir(repo, tmp_path / "serial")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    a = subprocess.Popen([str(bin_dir / "snakemake"), EOS_FIG, *ARGS], cwd=work, env=env,
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    c: subprocess.Popen[str] | None = None
    try:
        # freeze A (Snakemake and its job) once the job has written into its run folders
        deadline = time.monotonic() + 300
        while not (work / SETTING / "flow" / "cache_key.json").exists():
            assert a.poll() is None, a.communicate()[0]
            assert time.monotonic() < deadline, "A's eos job did not start"
            time.sleep(0.05)
        os.killpg(a.pid, signal.SIGSTOP)
        try:
            before = _files(work / SETTING)
            # B: another target; when it ends, Snakemake removes every lock, A's too
            snakemake(bin_dir, work, MF_FIG, *ARGS)
            assert not list((work / ".snakemake/locks").glob("*.lock"))
            # C asks for A's job's output while A's job is running: its copy of the job
            # waits for A's lock on the setting's folder (its log says for whom)
            c = subprocess.Popen([str(bin_dir / "snakemake"), SWEEP, *ARGS], cwd=work,
                                 env=env, text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            while "is being written by" not in _text(work / LOG):
                assert c.poll() is None, c.communicate()[0]
                assert time.monotonic() < deadline, "C's copy of the job never waited"
                time.sleep(0.1)
            after = _files(work / SETTING)
        finally:
            os.killpg(a.pid, signal.SIGCONT)
        out_a, _ = a.communicate(timeout=600)
        out_c, _ = c.communicate(timeout=600)
    finally:
        for proc in (a, c):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    # C deleted nothing of A's; both finished (C's copy reusing what A's finished)
    assert after == before, f"C touched A's files:\n{out_c}"
    assert a.returncode == 0, out_a
    assert c.returncode == 0, out_c
    snakemake(bin_dir, work, EOS_FIG, MF_FIG, *ARGS)  # nothing left to do, or the rest

    snakemake(bin_dir, serial, EOS_FIG, MF_FIG, *ARGS)
    for fig in (EOS_FIG, MF_FIG):
        csv = fig.replace(".pdf", ".csv")
        assert (work / csv).read_text() == (serial / csv).read_text(), csv
    sweep = [_numbers(json.loads((w / SETTING / "sweep.json").read_text()))
             for w in (work, serial)]
    assert sweep[0] == sweep[1]
    rel = f"{SETTING}/flow/flow.npz"
    with np.load(work / rel) as x, np.load(serial / rel) as y:
        assert sorted(x.files) == sorted(y.files)
        for key in x.files:
            np.testing.assert_array_equal(x[key], y[key])
    for run in sorted((serial / SETTING / "runs").glob("lr_*")):
        got = (work / SETTING / "runs" / run.name / "metrics.jsonl").read_text()
        assert got == (run / "metrics.jsonl").read_text(), run.name
