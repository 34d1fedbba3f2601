"""The workflow's eos and bridges rules plan, for the quick profile, exactly the outputs the
build's plan (sharpness.jobs) lists for their jobs (but for the sweeps of the settings the
profile drops, which `all` does not ask for), and each job's config file is written while the
workflow plans (the file a job's command line names exists before it runs)."""

from __future__ import annotations

import json

import pytest

from sharpness.config.profiles import load_profile
from sharpness.eos.config import dropped_settings
from sharpness.jobs import build_plan
from tests.pipeline.helpers import copy_workflow, snakemake

pytestmark = pytest.mark.workflow  # plans the whole quick profile with snakemake

PAPERS = ("eos_", "bridges_")


def test_the_rules_plan_the_outputs_of_the_plan(tmp_path, repo, bin_dir):
    work = copy_workflow(repo, tmp_path)
    summary = snakemake(bin_dir, work, "--forceall", "--cores", "1", "--detailed-summary")
    planned: dict[str, set[str]] = {}
    for row in summary.stdout.splitlines()[1:]:
        fields = row.split("\t")
        if len(fields) > 2 and fields[2].startswith(PAPERS):
            planned.setdefault(fields[2], set()).add(fields[0])
    config = load_profile([], repo / "workflow/config/quick.yaml")
    plan, dropped = build_plan(config), dropped_settings(config["eos"])
    assert dropped, "the quick profile drops settings"
    expected: dict[str, set[str]] = {}
    for job in plan:
        if job.rule.startswith(PAPERS) and not (job.rule == "eos_setting" and job.id in dropped):
            expected.setdefault(job.rule, set()).update(job.outputs)
    assert {"eos_setting", "eos_figure", "bridges_sam_eos_run"} <= set(expected)
    assert planned == expected
    for job in plan:
        if job.rule.startswith(PAPERS) and job.config_file is not None:
            assert json.loads((work / job.config_file).read_text()) == job.config, job.key
