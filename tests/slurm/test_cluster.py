"""A small part of the DAG through a real single-node SLURM cluster (slow: about 3 minutes).

tests/slurm/cluster.sh starts slurmctld + slurmd + munged on localhost from Debian's packages
(installing them if missing, which needs root and the package mirror); the l1_maxmargin figure is then
built with `--workflow-profile workflow/profiles/slurm`: two jobs, each an `sbatch` whose
`srun` step runs the rule. The figure job is given `gpu=1` so that the GPU request reaches
SLURM too (the node offers one stand-in GPU). The cluster is stopped in the fixture teardown.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.pipeline.helpers import copy_workflow, snakemake, write_config

pytestmark = pytest.mark.slow

CLUSTER = Path(__file__).with_name("cluster.sh")
FIGURE = "figures/minorfirst/l1_maxmargin.pdf"


def _free_port() -> int:
    """A TCP port nothing listens on now, so the test cluster never meets another one."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cluster_env(cluster_dir: Path) -> dict[str, str]:
    """Environment in which SLURM's commands talk to the test cluster."""
    return dict(os.environ, SLURM_CONF=str(cluster_dir / "slurm.conf"),
                PATH=f"{cluster_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0 and shutil.which("slurmctld") is None:
        pytest.skip("starting a SLURM cluster needs root (or slurm-wlm and munge installed)")
    cluster_dir = tmp_path_factory.mktemp("slurm-cluster")
    ports = dict(os.environ, SLURMCTLD_PORT=str(_free_port()), SLURMD_PORT=str(_free_port()))
    try:
        subprocess.run(["bash", str(CLUSTER), "start", str(cluster_dir)], check=True,
                       timeout=600, capture_output=True, text=True, env=ports)
    except subprocess.CalledProcessError as err:
        subprocess.run(["bash", str(CLUSTER), "stop", str(cluster_dir)], check=False)
        raise AssertionError(f"cluster did not start:\n{err.stdout}\n{err.stderr}") from err
    yield cluster_dir
    subprocess.run(["bash", str(CLUSTER), "stop", str(cluster_dir)], check=True, timeout=60)


@pytest.fixture(scope="module")
def built(cluster, tmp_path_factory, repo, bin_dir, monkeypatch_module):
    for key, value in _cluster_env(cluster).items():
        monkeypatch_module.setenv(key, value)
    work = copy_workflow(repo, tmp_path_factory.mktemp("slurm-run"), messages=False)
    cfg = write_config(work, {"minorfirst": {"l1_maxmargin": {"alphas": [1.0], "rhos": [0.1],
                                                              "steps": 400, "record_every": 4}}})
    proc = snakemake(bin_dir, work, FIGURE, "--workflow-profile", "workflow/profiles/slurm",
                     "--configfile", str(cfg), "--set-resources",
                     "minorfirst_diagonal_figure:gpu=1",
                     # the test cluster has no slurmdbd: status from squeue, no account
                     "--slurm-status-command", "squeue", "--slurm-no-account", timeout=900)
    return work, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _scontrol_jobs(cluster: Path) -> dict[str, dict[str, str]]:
    """`scontrol show job` for every job the controller still holds (MinJobAge=600 s)."""
    out = subprocess.run(["scontrol", "show", "job", "--oneliner"], env=_cluster_env(cluster),
                         capture_output=True, text=True, check=True).stdout
    jobs = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\S+?)=(\S*)", line))
        if "JobId" in fields:
            jobs[fields["JobId"]] = fields
    return jobs


def test_figure_built_through_slurm(built):
    work, log = built
    for suffix in (".pdf", ".png", ".csv", ".provenance.json"):
        assert (work / FIGURE.replace(".pdf", suffix)).stat().st_size > 0
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert len(submitted) == 2, log[-3000:]
    assert "2 of 2 steps (100%) done" in log


def test_numbers_made_on_the_cluster_are_the_runs(built):
    import numpy as np

    work, _ = built
    with np.load(work / "results/minorfirst/l1_maxmargin/data.npz") as data:
        cosine = data["single_gd_cos"][0]
    assert len(cosine) == 101  # 400 steps recorded every 4: the test's config reached the job
    assert np.all(np.diff(cosine) > 0) and cosine[-1] > 0.9


def test_each_rule_has_a_slurm_log_of_its_job(built):
    work, log = built
    for rule in ("minorfirst_diagonal_run", "minorfirst_diagonal_figure"):
        logs = list((work / ".snakemake/slurm_logs" / f"rule_{rule}").rglob("*.log"))
        assert len(logs) == 1, rule
        assert f"rule {rule}:" in logs[0].read_text()  # the job step ran this rule


def test_slurm_ran_the_jobs_with_each_rules_resources(built, cluster):
    work, log = built
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    jobs = [job for job in _scontrol_jobs(cluster).values() if job.get("JobName") == run_id]
    assert len(jobs) == 2
    by_rule = {job["Comment"].removeprefix("rule_").split("_wildcards")[0]: job for job in jobs}
    run, figure = by_rule["minorfirst_diagonal_run"], by_rule["minorfirst_diagonal_figure"]
    for job in jobs:
        assert job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0"
        assert job["TimeLimit"] == ("00:20:00" if job is run else "00:10:00")  # runtime
        assert job["WorkDir"] == str(work)
    assert run["MinMemoryNode"] == "1000M"  # mem_mb=1000 in the rule
    assert figure["MinMemoryNode"] == "1000M"
    assert "gpu:1" in figure.get("TresPerJob", "")  # gpu=1 -> --gpus=1, granted by SLURM
    assert "gpu" not in run.get("TresPerJob", "")


def test_slurm_job_completion_log_lists_both_jobs(built, cluster):
    _, log = built
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    records = [line for line in (cluster / "log/jobcomp.txt").read_text().splitlines()
               if f"Name={run_id}" in line]
    assert len(records) == 2
    assert all("JobState=COMPLETED" in line for line in records)
