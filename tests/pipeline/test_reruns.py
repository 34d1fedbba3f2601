"""Snakemake sees the code and the settings, and nothing else.

A tiny eos setting and the slice figure are built in a copy of the workflow whose `sharpness`
sources are a copy too (PYTHONPATH), so the test can edit a source file and ask
`snakemake -n` what would rerun. The setting's label holds an apostrophe and non-ASCII text,
which broke the shell command while params were pasted between single quotes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.pipeline.helpers import copy_workflow, job_stats, write_config

pytestmark = pytest.mark.workflow  # runs and plans the workflow

LABEL = "Müller's tiny net — ε"
TARGETS = ("figures/minorfirst/l1_maxmargin.pdf", "figures/eos/fig_phase.pdf")
OVERRIDES = {
    "minorfirst": {"l1_maxmargin": {"alphas": [1.0], "rhos": [0.1], "steps": 200,
                                    "record_every": 4}},
    "eos": {
        "settings": {"tiny": {
            "label": LABEL, "dataset": "mnist_embedded", "train_size": 32, "test_size": 50,
            "model": "fcn", "model_kwargs": {"hidden": 8, "activation": "tanh", "alpha": 0.3},
            "loss_goal": 0.05, "max_steps": 60, "sharpness_every": 20, "lr_factors": [0.5, 2.0],
            "measures": {"trace_samples": 2, "ascent_steps": 1, "avg_samples": 2},
        }},
        "figures": {"fig_phase": ["tiny"]},
    },
}


def _run(bin_dir: Path, work: Path, *args: str) -> str:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(work / "src"))
    proc = subprocess.run([str(bin_dir / "snakemake"), *args, "--configfile",
                           "test-config.yaml"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"snakemake {args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _planned(bin_dir: Path, work: Path) -> list[str]:
    """The rules `snakemake -n` would run for the targets (one entry a job)."""
    stats = job_stats(_run(bin_dir, work, "-n", *TARGETS))
    return sorted(rule for rule, n in stats.items() for _ in range(n))


@pytest.fixture(scope="module")
def work(tmp_path_factory, repo, bin_dir):
    work = copy_workflow(repo, tmp_path_factory.mktemp("reruns"))
    shutil.copytree(repo / "src" / "sharpness", work / "src" / "sharpness",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (work / "data").symlink_to(repo / "data")
    write_config(work, OVERRIDES)
    _run(bin_dir, work, "--cores", "1", *TARGETS)
    return work


def _edited(path: Path):
    class Edit:
        def __enter__(self):
            self.text = path.read_text()
            path.write_text(self.text + "\n# an uncommitted edit\n")

        def __exit__(self, *exc):
            path.write_text(self.text)
    return Edit()


def test_apostrophe_and_non_ascii_title_reach_the_job_intact(work):
    sweep = json.loads((work / "results/eos/settings/tiny/sweep.json").read_text())
    assert sweep["setting"]["label"] == LABEL
    assert (work / "results/eos/settings/tiny/runs").is_dir()


def test_nothing_to_do_after_a_build(work, bin_dir):
    assert _planned(bin_dir, work) == []


def test_editing_the_flow_reruns_only_the_eos_setting_and_its_figure(work, bin_dir):
    with _edited(work / "src/sharpness/eos/flow.py"):
        assert _planned(bin_dir, work) == ["eos_figure", "eos_setting"]
    assert _planned(bin_dir, work) == []


def test_editing_a_plot_module_reruns_only_its_figure(work, bin_dir):
    with _edited(work / "src/sharpness/eos/figures/phase.py"):
        assert _planned(bin_dir, work) == ["eos_figure"]
    with _edited(work / "src/sharpness/plots/style.py"):  # shared by every figure
        assert _planned(bin_dir, work) == ["eos_figure", "minorfirst_diagonal_figure"]


def test_forcerun_starts_the_runs_over(work, bin_dir):
    runs = work / "results/eos/settings/tiny/runs"
    marker = runs / "stale-marker"
    marker.write_text("left by an earlier run")
    # targets first: --forcerun takes every word after it as a rule or file
    _run(bin_dir, work, TARGETS[1], "--cores", "1", "--forcerun", "eos_setting")
    assert runs.is_dir() and not marker.exists()  # the folder was deleted and rebuilt
    prov = json.loads(next(runs.glob("lr_*/provenance.json")).read_text())
    assert prov["resumed_from_step"] is None
