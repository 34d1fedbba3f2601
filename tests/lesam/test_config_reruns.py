"""A lesam run reruns when its config file changes, and only then: a trained run in a copy of
the workflow, the profile's LE-SAM setting edited as a person would (text), asked again with
`snakemake -n`. The file is an input of the job (``sharpness.jobs.Plan.write``
writes it while the workflow plans, only when its content changes)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, job_stats, write_config

pytestmark = pytest.mark.workflow  # trains one tiny run through the workflow, plans it again

LESAM_RUN = "results/lesam/runs/domain_mnist-lesam-s0/final.json"
SAM_RUN = "results/lesam/runs/domain_mnist-sam-s0/final.json"
SETTING = "lesam: {sigma: 0.05, rho_max: 0.1, schedule: fractions}"


def _snakemake(bin_dir: Path, work: Path, *args: str) -> str:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([str(bin_dir / "snakemake"), *args, "--cores", "1", "--configfile",
                           str(work / "test-config.yaml")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"snakemake {args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def test_a_changed_setting_reruns_the_runs_whose_config_file_changed(tmp_path, bin_dir):
    work = copy_workflow(REPO, tmp_path)
    write_config(work, {"data": {"root": str(REPO / "data")}})
    _snakemake(bin_dir, work, LESAM_RUN, SAM_RUN)
    assert job_stats(_snakemake(bin_dir, work, "-n", LESAM_RUN, SAM_RUN)) == {}
    profile = work / "workflow/config/quick.yaml"
    text = profile.read_text()
    assert text.count(SETTING) == 1, "the quick profile's LE-SAM setting moved: update SETTING"
    profile.write_text(text.replace(SETTING, SETTING.replace("0.1,", "0.11,")))
    planned = _snakemake(bin_dir, work, "-n", LESAM_RUN, SAM_RUN)
    assert job_stats(planned) == {"lesam_train": 1}
    assert "Updated input files: results/lesam/configs/domain_mnist-lesam-s0.json" in planned
    profile.write_text(text)  # back as it was: the file's content is what it was built from
    assert job_stats(_snakemake(bin_dir, work, "-n", LESAM_RUN, SAM_RUN)) == {}
