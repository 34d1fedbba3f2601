"""`sharpness cost` prices the plan the workflow runs: every priced job names a training job
of :func:`sharpness.jobs.build_plan`, and every training job a figure or table reads is
priced, in each profile."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sharpness import cost
from sharpness.config.profiles import load_profile
from sharpness.eos.config import sweep_path
from sharpness.eos.jobs import RESULTS as EOS_RESULTS
from sharpness.jobs import Plan, build_plan

PROFILES = Path(__file__).resolve().parents[1] / "workflow/config"
#: the plan's rules whose jobs train (the test's own statement of them)
TRAINING = {"lesam_train", "lesam_glmc", "lesam_signal", "eos_setting", "eos_ablations",
            "gradcam_train", "bridges_sam_eos_run"}


@pytest.fixture(scope="module", params=["quick", "evidence", "paper"])
def profile(request: pytest.FixtureRequest) -> tuple[str, Plan, list[cost.Job]]:
    config = load_profile([str(PROFILES / f"{request.param}.yaml")], None)
    return request.param, build_plan(config), cost.plan_jobs(config)


def _undrawn(plan: Plan) -> set[str]:
    """The eos settings of the plan no figure job reads (a profile's dropped settings)."""
    read = {i for job in plan.of_rule("eos_figure").values() for i in job.inputs}
    settings = list(plan.ids("eos_setting")) + [
        name for job in plan.of_rule("eos_ablations").values() for name in job.config]
    return {name for name in settings if sweep_path(name, EOS_RESULTS) not in read}


def test_the_priced_jobs_are_the_plans_training_jobs(profile):
    name, plan, jobs = profile
    undrawn = _undrawn(plan)
    expected = {job.key for job in plan if job.rule in TRAINING
                and not (job.rule == "eos_setting" and job.id in undrawn)}
    if "lesam_eval" in plan.rules() and "cost" in plan.ids("lesam_eval"):
        expected.add("lesam_eval/cost")  # the cost table times steps of each optimizer
    assert {j.plan_job for j in jobs} == expected, name
    assert len({(j.paper, j.run) for j in jobs}) == len(jobs)  # each priced once


def test_each_training_job_is_priced_once_per_training_it_runs(profile):
    name, plan, jobs = profile
    per = Counter(j.plan_job for j in jobs)
    undrawn = _undrawn(plan)
    for rule in ("lesam_train", "lesam_glmc", "lesam_signal", "eos_setting"):
        for rid, job in plan.of_rule(rule).items():
            if rule == "eos_setting" and rid in undrawn:
                assert per[job.key] == 0, job.key  # planned, drawn by no figure: not priced
                continue
            assert per[job.key] == 1, job.key
            run, = (j.run for j in jobs if j.plan_job == job.key)
            assert run.rsplit("/", 1)[-1] == rid  # the cost names the run as the plan does
    for key, job in plan.of_rule("gradcam_train").items():
        params = job.config
        assert per[job.key] == (len(params["optimizers"]) * len(params["alphas"])
                                * len(params["seeds"])), job.key
        # expanded from its own file: one data set's runs
        assert {j.dataset for j in jobs if j.plan_job == job.key} == {
            params["datasets"][key]["name"]}
    for job in plan.of_rule("eos_ablations").values():
        assert per[job.key] == len(set(job.config) - undrawn), job.key
    for job in plan.of_rule("bridges_sam_eos_run").values():
        assert per[job.key] == len(job.config["optimizers"]), job.key


def test_a_profile_that_drops_a_setting_plans_it_but_does_not_price_it():
    config = load_profile([str(PROFILES / "quick.yaml")], None)
    plan = build_plan(config)
    undrawn = _undrawn(plan)
    assert undrawn  # the quick profile drops settings its figures do not draw
    priced = {j.run for j in cost.plan_jobs(config) if j.paper == "eos"}
    assert not {f"setting/{name}" for name in undrawn} & priced
    assert undrawn <= set(plan.ids("eos_setting")) | {
        n for job in plan.of_rule("eos_ablations").values() for n in job.config}


def test_the_stand_in_warning_names_the_groups_whose_planned_runs_carry_stand_ins():
    from sharpness.commands.cost import stand_in_warning

    config = load_profile([str(PROFILES / "paper.yaml")], None)
    assert stand_in_warning(config) is None  # the paper profile runs the real data sets
    group = next(iter(config["lesam"]["groups"]))
    config["lesam"]["groups"][group].setdefault("overrides", {})["stand_ins"] = ["a stand-in"]
    warning = stand_in_warning(config)
    assert warning is not None and f"group(s) {group} carry" in warning
