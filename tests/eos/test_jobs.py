"""The eos jobs of the build's plan (sharpness.eos.jobs) and the commands that read their files.

The quick profile's plan has the jobs and outputs that the config's own readers
(sharpness.eos.config) derive: a sweep per setting a figure draws, the variants in one job, the
toy, a figure per target; every job reads its config file, which holds the expanded setting, the
toy's section or a figure's inputs and dropped settings. ``sharpness eos toy|run|figure
--config-file`` read that file and a run records its path and SHA-256 in its provenance."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.config.profiles import load_profile
from sharpness.eos import jobs as eos_jobs
from sharpness.eos.config import (
    dropped_settings,
    expand_settings,
    figure_sweeps,
    figure_targets,
    one_job_ablations,
    sweep_path,
)
from sharpness.jobs import build_plan
from sharpness.jobs.files import config_text
from tests.conftest import REPO


@pytest.fixture(scope="module")
def quick() -> dict:
    return load_profile([], REPO / "workflow/config/quick.yaml")


def test_the_plan_has_the_jobs_and_outputs_the_config_derives(quick):
    """Outputs by rule, derived from the config by sharpness.eos.config's readers: a sweep per
    setting (the variants in one job when ``one_job``), the toy, each target's PDF/PNG/CSV."""
    eos = quick["eos"]
    plan = build_plan(quick)
    targets = figure_targets(eos)
    together = one_job_ablations(eos)
    alone = [n for n in expand_settings(eos) if n not in together]
    assert together and alone, "the quick profile runs both kinds of setting jobs"
    outputs = {rule: sorted(o for job in plan.of_rule(rule).values() for o in job.outputs)
               for rule in ("eos_toy", "eos_setting", "eos_ablations", "eos_figure")}
    assert outputs["eos_toy"] == ["results/eos/toy/toy.json"]
    assert outputs["eos_setting"] == sorted(sweep_path(n) for n in alone)
    assert plan.ids("eos_setting") == alone
    assert outputs["eos_ablations"] == sorted(sweep_path(n) for n in together)
    assert outputs["eos_figure"] == sorted(t[:-4] + k for t in targets
                                           for k in (".pdf", ".png", ".csv"))
    # the plan is closed: each figure's inputs are other jobs' outputs or its own file
    made = set(plan.outputs())
    for job in plan.of_rule("eos_figure").values():
        assert set(job.inputs) - made == {job.config_file}, job.key


def test_each_job_file_holds_the_settings_it_runs(quick):
    """A setting's file is the setting as expanded; the variants' file every variant; a
    figure's file its inputs in the order drawn and the dropped settings; all under
    results/eos/configs/ and an input of their job."""
    eos = quick["eos"]
    plan = build_plan(quick)
    settings = expand_settings(eos)
    eos_rules = ("eos_toy", "eos_setting", "eos_ablations", "eos_figure")
    for job in (j for j in plan if j.rule in eos_rules):
        assert job.config_file.startswith("results/eos/configs/"), job.key
        assert job.config_file in job.inputs, job.key
    for name, job in plan.of_rule("eos_setting").items():
        assert job.config == settings[name]
    ablations = plan.job("eos_ablations", eos_jobs.ABLATIONS).config
    assert list(ablations) == one_job_ablations(eos)  # in the profile's order
    phase = plan.job("eos_figure", "fig_phase").config
    assert phase == {"figure": "fig_phase", "inputs": figure_sweeps(eos, "fig_phase"),
                     "dropped": dropped_settings(eos)}
    assert plan.job("eos_toy", "toy").config == eos["toy"]


def test_a_dropped_setting_has_a_job_no_figure_reads(quick):
    """A setting the profile drops keeps its job (its sweep can be asked for by path), and no
    figure job reads its sweep, so `all` does not run it."""
    dropped = dropped_settings(quick["eos"])
    assert dropped, "the quick profile drops settings"
    plan = build_plan(quick)
    read = {p for job in plan.of_rule("eos_figure").values() for p in job.inputs}
    for name in dropped:
        (sweep,) = plan.job("eos_setting", name).outputs
        assert sweep not in read


TOY = {"x": [2.0, 1.0], "y": 1.0, "w0": 0.1, "lrs": [0.05], "loss_goal": 1e-4,
       "max_steps": 200, "d2_x": [2.0, 1.0], "d2_lrs": [0.05]}


def _file(path: Path, content: object) -> str:
    path.write_text(config_text(content))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.e2e  # runs the toy and draws its figure
def test_the_toy_and_its_figure_read_their_files(tmp_path):
    """`eos toy --config-file` runs the file's settings and records its path and SHA-256;
    `eos figure --config-file` draws the files it lists."""
    toy_file = tmp_path / "toy.json"
    sha = _file(toy_file, TOY)
    assert main(["eos", "toy", "--config-file", str(toy_file), "--out",
                 str(tmp_path / "toy")]) == 0
    record = json.loads((tmp_path / "toy/provenance.json").read_text())
    assert record["config_file"] == {"path": str(toy_file), "sha256": sha}
    assert record["params"] == TOY
    fig_file = tmp_path / "fig.json"
    _file(fig_file, {"figure": "fig_diagonal", "inputs": [str(tmp_path / "toy/toy.json")],
                     "dropped": {}})
    out = tmp_path / "fig_diagonal.pdf"
    assert main(["eos", "figure", "--id", "fig_diagonal", "--config-file", str(fig_file),
                 "--out", str(out)]) == 0
    assert out.is_file() and out.with_suffix(".csv").is_file()


def test_a_figure_file_of_another_figure_is_refused(tmp_path, capsys):
    fig_file = tmp_path / "fig.json"
    _file(fig_file, {"figure": "fig_phase", "inputs": ["a/sweep.json"], "dropped": {}})
    assert main(["eos", "figure", "--id", "fig_measures", "--config-file", str(fig_file),
                 "--out", str(tmp_path / "x.pdf")]) != 0
    assert "file of figure 'fig_phase', not of --id fig_measures" in capsys.readouterr().err


def test_a_setting_run_records_its_file(tmp_path, monkeypatch):
    """`eos run --config-file` runs the file's setting with the command line's data folder
    and records the file (the sweep itself is replaced: tests/eos/test_sweep runs it)."""
    import sharpness.eos.sweep as sweep

    seen = {}

    def fake(setting, out, data_root, threads, seal_result):
        seen.update(setting=setting, data_root=data_root)
        return {"rows": [], "s_gf": 1.0, "eta_c": 2.0, "flow": {"status": "ok"}}

    monkeypatch.setattr(sweep, "run_setting", fake)
    setting_file = tmp_path / "s.json"
    sha = _file(setting_file, {"lrs": [0.1], "max_steps": 5})
    assert main(["eos", "run", "--config-file", str(setting_file), "--out",
                 str(tmp_path / "run"), "--data-root", "my data"]) == 0
    record = json.loads((tmp_path / "run/provenance.json").read_text())
    assert record["config_file"] == {"path": str(setting_file), "sha256": sha}
    assert seen["data_root"] == "my data" and seen["setting"]["lrs"] == [0.1]


def test_a_file_that_is_not_an_object_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]\n")
    assert main(["eos", "run-many", "--config-file", str(bad), "--out",
                 str(tmp_path / "o")]) != 0
    assert "expected a JSON object, got list" in capsys.readouterr().err

