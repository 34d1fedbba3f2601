"""The build's plan (:mod:`sharpness.jobs`): built once per process and config, torch-free,
and the jobs the workflow runs with the config files, inputs and outputs its rules use."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from sharpness.frozen import thaw
from sharpness.jobs import Job, Plan, build_plan
from sharpness.lesam.experiments import TRAIN_FINAL, output, training_runs
from sharpness.mappings import deep_merge
from sharpness.train.config import DEFAULTS, validate_config
from tests.conftest import REPO


@pytest.fixture(scope="module")
def quick() -> dict:
    return yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())


def test_built_once_per_config(quick):
    """The same config gives the same object (the rules, the checks and the listings that ask
    again share it); another config another plan."""
    assert build_plan(quick) is build_plan(copy.deepcopy(quick))
    other = copy.deepcopy(quick)
    other["lesam"]["optimizers"]["lesam"]["rho_max"] = 0.2
    assert build_plan(other) is not build_plan(quick)


@pytest.mark.e2e  # an import check in a fresh interpreter
def test_importing_the_plan_never_imports_torch():
    """The plan is pure: the workflow checks its config (every run's model and options among
    it) and plans (and `sharpness jobs` lists) without torch."""
    code = ("import sys, yaml; from sharpness.jobs import build_plan; "
            "from sharpness.jobs import check_workflow_config; "
            f"cfg = yaml.safe_load(open({str(REPO / 'workflow/config/quick.yaml')!r})); "
            f"check_workflow_config(cfg, {str(REPO / 'workflow/config/config.schema.yaml')!r}); "
            "build_plan(cfg); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_lesam_training_jobs_are_the_run_list(quick):
    """One lesam_train job per run of the run list, writing the run's final.json and reading
    its config file, which holds the run's resolved config: the run list's settings and every
    other key the engine reads, its default filled (all but the data folder, the job's
    ``--data-root``), so that the engine's validation leaves it as it is."""
    plan = build_plan(quick)
    runs = training_runs(quick["lesam"])
    assert plan.ids("lesam_train") == list(runs)
    for rid, run in runs.items():
        job = plan.job("lesam_train", rid)
        assert output(TRAIN_FINAL, run=rid) in job.outputs
        assert job.config_file in job.inputs
        assert set(job.config) == set(DEFAULTS) - {"data_root"}
        assert deep_merge(job.config, thaw(run["config"])) == job.config  # its own settings
        given = {**job.config, "data_root": "somewhere"}
        assert validate_config(given, resolved=True) == given
        for dep in run["depends"]:
            assert output(TRAIN_FINAL, run=dep) in job.inputs


def test_every_config_file_is_written_once_and_unchanged_files_are_left(tmp_path, quick):
    """Writing the plan writes every job's file; writing it again touches none."""
    plan = build_plan(quick)
    written = plan.write(tmp_path)
    assert sorted(written) == sorted(plan.files())
    assert plan.write(tmp_path) == []


def test_a_job_name_is_unique_and_an_unknown_one_is_named():
    """Two jobs of one rule with one id are refused; asking for an absent job names the
    rule's jobs."""
    with pytest.raises(ValueError, match="two jobs named r/a"):
        Plan([Job("r", "a"), Job("r", "a")])
    plan = Plan([Job("r", "a"), Job("r", "b")])
    with pytest.raises(KeyError, match="its jobs: a, b"):
        plan.job("r", "c")
    with pytest.raises(ValueError, match="two contents"):
        Plan([Job("r", "a", {"x": 1}, "f.json"), Job("s", "a", {"x": 2}, "f.json")]).files()


def test_the_jobs_command_lists_the_plan_and_shows_a_job(quick, monkeypatch, capsys):
    """`sharpness jobs --count` counts the plan's jobs per rule; `--show RULE/ID` prints the
    settings the job's file holds; an unknown job is a one-line error naming the rule's jobs."""
    from sharpness.cli import main

    monkeypatch.chdir(REPO)  # reads the profile; writes nothing
    plan = build_plan(quick)
    assert main(["jobs", "--count"]) == 0
    counts = dict(line.split() for line in capsys.readouterr().out.splitlines())
    assert int(counts["total"]) == len(plan)
    assert int(counts["lesam_train"]) == len(plan.ids("lesam_train"))
    rid = plan.ids("lesam_train")[0]
    assert main(["jobs", "--show", f"lesam_train/{rid}"]) == 0
    import json

    assert json.loads(capsys.readouterr().out) == plan.job("lesam_train", rid).config
    assert main(["jobs", "--show", "lesam_train/nope"]) != 0
    assert "its jobs:" in capsys.readouterr().err
