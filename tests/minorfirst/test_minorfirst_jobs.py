"""The minorfirst paper's jobs in the build's plan (:mod:`sharpness.minorfirst.jobs`,
:mod:`sharpness.gradcam.jobs`): one job per figure and data set, each reading only the settings
it uses from its config file; the commands read that file and record its SHA-256; and the
workflow's rules plan exactly the plan's jobs and outputs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from sharpness.cli import main
from sharpness.errors import ConfigError
from sharpness.gradcam import jobs as gradcam_jobs
from sharpness.jobs import build_plan
from sharpness.minorfirst import jobs as minorfirst_jobs
from sharpness.runs.provenance import file_sha256
from sharpness.runs.signing import own_public_key
from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, snakemake

RULES = ("minorfirst_diagonal_run", "minorfirst_diagonal_figure", "gradcam_train",
         "gradcam_maps", "gradcam_figure")


@pytest.fixture(scope="module")
def quick() -> dict:
    return yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())


def _changed(config: dict, *keys: str, value) -> dict:
    """A copy of ``config`` with the entry at ``keys`` set to ``value``."""
    out = copy.deepcopy(config)
    node = out
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return out


def _files(config: dict) -> dict:
    return build_plan(config).files()


def test_every_figure_and_data_set_is_one_job(quick):
    """A run and a drawing per figure the command computes; a training and a maps job per
    data set, in the config's order; one Grad-CAM figure that reads every data set's maps."""
    from sharpness.commands.minorfirst import _ids

    plan = build_plan(quick)
    assert sorted(plan.ids("minorfirst_diagonal_run")) == sorted(_ids())
    assert plan.ids("minorfirst_diagonal_figure") == plan.ids("minorfirst_diagonal_run")
    datasets = list(quick["gradcam"]["datasets"])
    assert plan.ids("gradcam_train") == plan.ids("gradcam_maps") == datasets
    figure = plan.job("gradcam_figure", "gradcam")
    assert figure.config["maps"] == [f"{k}={gradcam_jobs.maps_folder(k)}" for k in datasets]
    for key in datasets:
        maps = plan.job("gradcam_maps", key)
        assert set(plan.job("gradcam_train", key).outputs) <= set(maps.inputs)
        assert set(maps.outputs) <= set(figure.inputs)
    for fig in plan.ids("minorfirst_diagonal_run"):
        run = plan.job("minorfirst_diagonal_run", fig)
        assert run.config == quick["minorfirst"][fig]
        assert set(run.outputs) == set(plan.job("minorfirst_diagonal_figure", fig).inputs)
    for rule in RULES:
        for job in plan.of_rule(rule).values():
            assert job.config_file is None or job.config_file in job.inputs, job.key


def test_a_setting_rewrites_only_the_files_of_the_jobs_that_read_it(quick):
    """A figure's setting changes that figure's file only; a data set's label no training
    file, its training size that data set's training and maps files (the figure states it
    too); an optimizer's radius every training and maps file."""
    base = _files(quick)

    def changed(config: dict) -> set[str]:
        new = _files(config)
        assert set(new) == set(base)
        return {path for path in base if new[path] != base[path]}

    steps = quick["minorfirst"]["l1_maxmargin"]["steps"]
    assert changed(_changed(quick, "minorfirst", "l1_maxmargin", "steps", value=steps + 1)) \
        == {minorfirst_jobs.CONFIG.format(fig="l1_maxmargin")}
    label = changed(_changed(quick, "gradcam", "datasets", "svhn", "label", value="S"))
    assert label == {gradcam_jobs.CONFIG.format(step="maps", dataset="svhn"),
                     gradcam_jobs.FIGURE_CONFIG}
    size = changed(_changed(quick, "gradcam", "datasets", "svhn", "train_size", value=500))
    assert size == {gradcam_jobs.CONFIG.format(step=s, dataset="svhn")
                    for s in ("train", "maps")} | {gradcam_jobs.FIGURE_CONFIG}
    rho = changed(_changed(quick, "gradcam", "optimizers", "sam", "hparams", value={"rho": 1}))
    assert {p for p in rho if "/train/" in p} == {
        gradcam_jobs.CONFIG.format(step="train", dataset=k) for k in quick["gradcam"]["datasets"]}


def test_a_training_file_gives_every_run_the_config_the_whole_section_gives(quick):
    """The training job's file is stripped to what a run reads: every run of the grid gets
    the same training config from it as from the whole section."""
    from sharpness.gradcam.study import run_config

    section = quick["gradcam"]
    for key in section["datasets"]:
        trimmed = gradcam_jobs.train_params(section, key)
        for optimizer in section["optimizers"]:
            for alpha in section["alphas"]:
                for seed in section["seeds"]:
                    assert run_config(trimmed, key, optimizer, alpha, seed) == \
                        run_config(section, key, optimizer, alpha, seed)


def test_a_missing_figure_section_is_named(quick):
    config = copy.deepcopy(quick)
    del config["minorfirst"]["deep_l"]
    with pytest.raises(ConfigError, match="no section for figure.*deep_l"):
        minorfirst_jobs.jobs(config)


def _source(path: Path) -> dict[str, str]:
    """What a job records of a file its plan wrote: path, SHA-256 and the plan's signer (this
    machine's key)."""
    return {"path": str(path), "sha256": file_sha256(path), "signed_by": own_public_key()}


def test_minorfirst_run_reads_its_config_file_and_records_its_hash(tmp_path, quick):
    """`minorfirst run --config-file` computes from the file's settings (the run's recorded
    params are the file's) and records the file's path and SHA-256."""
    plan = build_plan(quick)
    job = plan.job("minorfirst_diagonal_run", "l2_regimes")
    plan.write(tmp_path)
    path = tmp_path / job.config_file
    out = tmp_path / "run"
    assert main(["minorfirst", "run", "l2_regimes", "--config-file", str(path),
                 "--out", str(out)]) == 0
    record = json.loads((out / "provenance.json").read_text())
    assert record["config_file"] == _source(path)
    assert record["params"] == job.config


def test_gradcam_figure_reads_its_maps_from_its_file(tmp_path, monkeypatch, capsys, quick):
    """`gradcam figure --config-file` draws the maps folders the file names, in its order,
    with the file's params; `--maps` beside a file is refused."""
    from sharpness.gradcam import figures

    plan = build_plan(quick)
    job = plan.job("gradcam_figure", "gradcam")
    plan.write(tmp_path)
    path = str(tmp_path / job.config_file)
    seen: dict = {}

    def make_outputs(params, dirs, out, table):
        seen.update(params=params, dirs=list(dirs.items()))
        return {"rows": [], "sentence": "ok"}

    monkeypatch.setattr(figures, "make_outputs", make_outputs)
    assert main(["gradcam", "figure", "--config-file", path, "--out", "f.pdf",
                 "--table", "t.md"]) == 0
    assert seen["params"] == json.loads(json.dumps(quick["gradcam"]))
    assert seen["dirs"] == [tuple(m.split("=", 1)) for m in job.config["maps"]]
    assert main(["gradcam", "figure", "--config-file", path, "--maps", "a=b", "--out", "f.pdf",
                 "--table", "t.md"]) != 0
    assert "--maps goes with --params" in capsys.readouterr().err


def test_gradcam_train_and_maps_read_their_file_and_record_its_hash(tmp_path, monkeypatch,
                                                                    capsys, quick):
    """`gradcam train` and `gradcam maps` run on the file's settings and hand the file's path
    and SHA-256 to the records they write; a file lacking a key the action reads is named."""
    from sharpness.gradcam import study

    plan = build_plan(quick)
    plan.write(tmp_path)
    train = tmp_path / plan.job("gradcam_train", "mnist").config_file
    maps = tmp_path / plan.job("gradcam_maps", "mnist").config_file
    seen: dict = {}

    def train_group(params, dataset, optimizer, out, threads=None, *, write=True):
        seen.setdefault("trained", []).append((optimizer, params["datasets"][dataset]))
        return {"runs": []}

    monkeypatch.setattr(study, "train_group", train_group)
    monkeypatch.setattr(study, "write_group", lambda p, o, s, config_file=None:
                        seen.setdefault("written", []).append(config_file))
    monkeypatch.setattr(study, "compute_maps", lambda params, *a, config_file=None, **k:
                        seen.update(maps=config_file, root=k["root"])
                        or {"shares": study.np.zeros(1)})
    assert main(["gradcam", "train", "--config-file", str(train), "--dataset", "mnist",
                 "--data-root", "mine", "--out", str(tmp_path / "runs")]) == 0
    assert [o for o, _ in seen["trained"]] == sorted(quick["gradcam"]["optimizers"])
    assert all(spec["data_root"] == "mine" for _, spec in seen["trained"])
    assert seen["written"] == [_source(train)] * 3
    assert main(["gradcam", "maps", "--config-file", str(maps), "--dataset", "mnist",
                 "--runs", "r", "--data-root", "mine", "--out", str(tmp_path / "m")]) == 0
    assert seen["maps"] == _source(maps) and seen["root"] == "mine"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"datasets": {}}))
    assert main(["gradcam", "train", "--config-file", str(bad), "--dataset", "mnist",
                 "--out", str(tmp_path / "x")]) != 0
    assert "lack key(s) optimizers, alphas, seeds, train" in capsys.readouterr().err


@pytest.mark.workflow  # plans the quick profile with Snakemake
def test_the_rules_plan_the_plans_jobs_and_outputs(tmp_path, repo, bin_dir, quick):
    """Every output Snakemake plans for the minorfirst and Grad-CAM rules (a dry run of the
    quick profile, every job forced) is the output of the plan's job of that rule, and
    every job of the plan is planned."""
    work = copy_workflow(repo, tmp_path)
    proc = snakemake(bin_dir, work, "--detailed-summary", "--forceall", "--cores", "1")
    planned: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) > 2 and cells[2] in RULES:
            planned.setdefault(cells[2], set()).add(cells[0])
    plan = build_plan(quick)
    assert planned == {rule: {o for job in plan.of_rule(rule).values() for o in job.outputs}
                       for rule in RULES}
