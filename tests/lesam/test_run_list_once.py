"""The lesam run list is expanded once per process, and what every caller reads is one
read-only copy."""

from __future__ import annotations

import copy

import pytest

from sharpness.config.profiles import DEFAULT_PROFILE, load_profile
from sharpness.frozen import thaw
from sharpness.jobs import check_workflow_config
from sharpness.lesam import experiments as exp
from sharpness.lesam import steps
from sharpness.mappings import deep_merge, offset_seeds
from tests.conftest import REPO


@pytest.fixture(scope="module")
def quick() -> dict:
    return load_profile([], REPO / DEFAULT_PROFILE)


def test_planning_the_quick_profile_expands_the_run_list_once(quick, monkeypatch):
    """The calls the Snakefile makes while it plans the quick profile's lesam tables (the
    config check, the rule file's run lists, every training job's inputs, every table's and
    evaluation's runs) share one expansion: the expansion's own steps (the optimizer
    entries of each group and study, normalised) run as often as for one expansion."""
    entries = []
    normalise = exp.optimizer_entries
    monkeypatch.setattr(exp, "optimizer_entries",
                        lambda *a: entries.append(1) or normalise(*a))
    exp.expand.cache_clear()
    exp.all_runs(copy.deepcopy(quick["lesam"]))
    once, entries[:] = len(entries), []
    config = copy.deepcopy(quick)
    exp.expand.cache_clear()
    check_workflow_config(config, REPO / "workflow/config/config.schema.yaml")
    offset_seeds(config)
    section = config["lesam"]
    training = exp.training_runs(section)
    exp.glmc_runs(section), exp.signal_runs(section)
    for run in training:
        steps.run_inputs(section, run, config["data"])
    for item in section["items"]:
        steps.build_runs(section, item)
    for what in steps.EVAL_ITEMS:
        steps.eval_runs(section, what)
    exp.missing_sources(section)
    assert len(training) > 1
    assert exp.expand.cache_info().misses == 1
    assert len(entries) == once > 0


def test_a_changed_section_is_expanded_again(quick):
    section = copy.deepcopy(quick["lesam"])
    before = exp.training_runs(section)
    group = next(iter(section["groups"]))
    section["groups"][group]["seeds"] = [*section["groups"][group]["seeds"], 99]
    after = exp.training_runs(section)
    assert set(after) - set(before) and all(r["seed"] == 99 for rid, r in after.items()
                                            if rid not in before)


def test_the_shared_runs_are_read_only_and_copies_are_not(quick):
    runs = exp.training_runs(quick["lesam"])
    run = next(iter(runs.values()))
    with pytest.raises(TypeError, match="read-only"):
        run["config"]["lr"] = 1.0
    with pytest.raises(TypeError, match="read-only"):
        run["depends"].append("x")
    for mutable in (copy.deepcopy(run["config"]), thaw(run["config"]),
                    deep_merge(run["config"], {})):
        mutable["opt_hparams"]["extra"] = 1
        assert "extra" not in run["config"]["opt_hparams"]


def test_planning_validates_each_run_once(quick, monkeypatch):
    """The config check and the plan's job files share one validation of each run: building
    the quick profile's plan after its check validates every lesam run exactly once."""
    from sharpness import jobs
    from sharpness.lesam import checks

    calls = []
    validate = checks.validate_config
    monkeypatch.setattr(checks, "validate_config",
                        lambda cfg, **kw: calls.append(cfg.get("seed")) or validate(cfg, **kw))
    monkeypatch.setattr(jobs, "_BUILT", {})
    exp.expand.cache_clear()
    checks._checked.cache_clear()
    config = copy.deepcopy(quick)
    check_workflow_config(config, REPO / "workflow/config/config.schema.yaml")
    plan = jobs.build_plan(config)
    runs = exp.all_runs(config["lesam"])
    n_runs = len(runs.training) + len(runs.glmc) + len(runs.signal)
    assert n_runs > 1 and len(calls) == n_runs
    planned = [job for job in plan if job.rule in ("lesam_train", "lesam_glmc", "lesam_signal")]
    assert len(planned) == n_runs
