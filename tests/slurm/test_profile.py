"""The SLURM profile parses and every rule's resources become the right sbatch options.

One dry run of the whole quick DAG through `--workflow-profile workflow/profiles/slurm` (no
cluster needed); each job is then handed to the installed plugin's sbatch builder. The l1_maxmargin
figure is given `gpu=1` by `--set-resources`, standing in for the training rules that ask for a
GPU in the paper profile (the quick profile trains on the CPU, so none asks there).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.pipeline.helpers import copy_workflow, paper_with_imagenet, snakemake
from tests.slurm.sbatch import parse_dry_run, sbatch_call, sbatch_options

pytestmark = pytest.mark.workflow  # plans the workflow under the SLURM profile

PROFILE = "workflow/profiles/slurm"


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory, repo, bin_dir):
    work = copy_workflow(repo, tmp_path_factory.mktemp("slurm-dry"), messages=False)
    proc = snakemake(bin_dir, work, "-n", "--workflow-profile", PROFILE,
                     "--set-resources", "minorfirst_diagonal_figure:gpu=1", timeout=300)
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def jobs(dry_run):
    found = parse_dry_run(dry_run)
    assert len(found) > 10, dry_run[-2000:]
    return found


def test_profile_is_the_slurm_executor_without_a_global_gpu_cap(repo: Path):
    profile = yaml.safe_load((repo / PROFILE / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert "resources" not in profile  # a global gpu=1 would run one GPU job at a time
    defaults = dict(item.split("=") for item in profile["default-resources"])
    assert {"mem_mb", "runtime", "gpu"} <= set(defaults)


def test_dry_run_uses_the_slurm_profile_alone(dry_run):
    assert f"workflow specific profile {PROFILE}" in dry_run
    assert "profiles/default" not in dry_run  # --workflow-profile replaces the local default


def test_every_job_has_memory_runtime_and_gpu(jobs):
    for job in jobs:
        for name in ("mem_mb", "runtime", "gpu"):
            assert isinstance(job.resources.get(name), int), (job.rule, name, job.resources)


def test_resources_become_sbatch_options(jobs):
    for job in jobs:
        options = sbatch_options(sbatch_call(job))
        assert options["--mem"] == str(job.resources["mem_mb"]), job.rule
        assert options["-t"] == str(job.resources["runtime"]), job.rule
        assert options["--cpus-per-task"] == str(job.threads), job.rule
        gpus = job.resources["gpu"]
        if gpus > 0:
            assert options["--gpus"] == str(gpus), job.rule
            assert "--ntasks" not in options  # GPU jobs leave task geometry to SLURM
        else:
            assert "--gpus" not in options and "--gres" not in options, job.rule
            assert options["--ntasks"] == "1"


def test_rule_values_win_over_profile_defaults(jobs):
    by_rule = {job.rule: job for job in jobs}
    run = by_rule["minorfirst_diagonal_run"]  # the rule says mem_mb=1000, runtime=20, no gpu
    assert (run.resources["mem_mb"], run.resources["runtime"], run.resources["gpu"]) == \
        (1000, 20, 0)
    figure = sbatch_options(sbatch_call(by_rule["minorfirst_diagonal_figure"]))
    assert figure["--gpus"] == "1" and figure["--mem"] == "1000"
    assert by_rule["all"].resources["mem_mb"] == 2000  # `all` says nothing: profile default


@pytest.mark.slow
def test_paper_profile_training_rules_request_gpus(tmp_path, repo, bin_dir):
    """At paper scale the rules that train on a GPU say gpu=1, and sbatch gets --gpus=1."""
    work = copy_workflow(repo, tmp_path, messages=False)
    proc = snakemake(bin_dir, work, "-n", "--workflow-profile", PROFILE,
                     "--configfile", "workflow/config/paper.yaml",
                     paper_with_imagenet(work, repo), timeout=600)
    jobs = parse_dry_run(proc.stdout + proc.stderr)
    gpu_jobs = [job for job in jobs if job.resources["gpu"] > 0]
    assert gpu_jobs, "no job of the paper profile asks for a GPU"
    for job in gpu_jobs:
        assert sbatch_options(sbatch_call(job))["--gpus"] == str(job.resources["gpu"])
    print(sorted({job.rule for job in gpu_jobs}))
