"""Each lesam training, GLMC, signal, eval and build job reads its config from a file the plan writes
(``sharpness.jobs.Plan.write``, the lesam jobs of :mod:`sharpness.lesam.jobs`): one file a run, rewritten only when its
content changes (Snakemake reruns a job whose input is newer than its output), read by
``sharpness train --config-file`` / ``sharpness lesam glmc|signal --config-file``, whose run
records the file's SHA-256."""

from __future__ import annotations

import copy
import json
import os

import pytest
import yaml

from sharpness.cli import main
from sharpness.frozen import thaw
from sharpness.io import read_json
from sharpness.jobs import Plan
from sharpness.jobs.files import plan_signer, signature_path, write_files
from sharpness.lesam.experiments import (
    STEP_CONFIG,
    TRAIN_CONFIG,
    glmc_runs,
    output,
    signal_runs,
    training_runs,
)
from sharpness.lesam.jobs import jobs
from sharpness.lesam.steps import (
    EVAL_ITEMS,
    build_runs,
    eval_runs,
    step_section,
)
from sharpness.mappings import deep_merge
from sharpness.runs.provenance import file_sha256
from sharpness.runs.signing import own_public_key
from sharpness.train.config import DEFAULTS
from tests.conftest import REPO


def job_files(section):
    """``{config file: content}`` of every lesam job of ``section``, as the plan writes them."""
    return Plan(jobs({"lesam": section})).files()


@pytest.fixture
def section():
    return yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())["lesam"]


def test_one_file_a_run_holding_what_the_job_ran_before(section):
    """A file for every training, GLMC and signal run, holding the run's config as the run
    list resolves it, with every other key the engine reads filled with its default (all but
    the data folder, the job's ``--data-root``; a GLMC run's ``glmc`` settings beside)."""
    files = job_files(section)
    train, glmc, signal = training_runs(section), glmc_runs(section), signal_runs(section)
    evals = [what for what, item in EVAL_ITEMS.items() if item in section["items"]]
    assert len(files) == len(train) + len(glmc) + len(signal) + len(evals) + len(
        section["items"])

    def holds(held, run):  # noqa: ANN001, ANN202
        own = thaw(run["config"])
        assert set(held) == set(DEFAULTS) - {"data_root"} | set(own) - set(DEFAULTS)
        assert deep_merge(held, own) == held  # its own settings, nested ones included

    for rid, run in train.items():
        holds(files[output(TRAIN_CONFIG, run=rid)], run)
    for rid, run in glmc.items():
        held = files[output(STEP_CONFIG, step="glmc", run=rid)]
        assert set(held) == {"config"} and "glmc" in held["config"]
        holds(held["config"], run)
    for rid, run in signal.items():
        held = files[output(STEP_CONFIG, step="signal", run=rid)]
        assert held["probe_every"] == run["probe_every"] and set(held) == {"config",
                                                                           "probe_every"}
        holds(held["config"], run)
    for what in evals:
        assert files[output(STEP_CONFIG, step="eval", run=what)] == {
            "params": thaw(step_section(section, "eval", EVAL_ITEMS[what])),
            "runs": eval_runs(section, what)}
    build = files[output(STEP_CONFIG, step="build", run="table_domain_gen")]
    assert build == {"params": thaw(step_section(section, "build", "table_domain_gen")),
                     "runs": build_runs(section, "table_domain_gen"),
                     "evaluation": "results/lesam/eval/domain_gen.json"}


def test_an_unchanged_file_is_not_touched_and_a_changed_one_is(section, tmp_path):
    """Planning again writes nothing (modification times stay, so nothing reruns); a changed
    LE-SAM setting rewrites exactly the files whose content changed: of the runs, LE-SAM's
    only (an ablation variant that sets rho_max itself keeps its file)."""
    written = write_files(job_files(section), tmp_path)
    assert sorted(written) == sorted(job_files(section))
    signatures = [signature_path(tmp_path / rel) for rel in written]
    assert all(plan_signer(tmp_path / rel, file_sha256(tmp_path / rel)) == own_public_key()
               for rel in written)
    old = {rel: (tmp_path / rel).stat().st_mtime_ns for rel in written}
    for path in [*(tmp_path / rel for rel in written), *signatures]:  # a rewrite would show
        os.utime(path, ns=(1, 1))
    assert write_files(job_files(section), tmp_path) == []
    assert all((tmp_path / rel).stat().st_mtime_ns == 1 for rel in old)
    assert all(path.stat().st_mtime_ns == 1 for path in signatures)
    changed = copy.deepcopy(section)
    changed["optimizers"]["lesam"]["rho_max"] = 0.2
    rewritten = write_files(job_files(changed), tmp_path)
    before, after = job_files(section), job_files(changed)
    assert sorted(rewritten) == sorted(rel for rel in after if after[rel] != before[rel])
    assert output(TRAIN_CONFIG, run="cifar10_resnet18-lesam-s0") in rewritten
    runs = {rel: cfg.get("config", cfg) for rel, cfg in after.items() if "params" not in cfg}
    assert all(cfg["optimizer"] == "lesam" for rel, cfg in runs.items() if rel in rewritten)
    assert all((tmp_path / rel).stat().st_mtime_ns != 1 for rel in rewritten)


TINY = {"dataset": "mnist_embedded", "data_root": "nowhere", "model": "cnn",
        "model_kwargs": {"channels": 4}, "train_size": 64, "test_size": 32, "epochs": 1,
        "batch_size": 32, "lr": 0.05, "device": "cpu"}


def test_train_reads_the_file_and_records_its_hash(tmp_path, capsys, one_thread):
    """`sharpness train --config-file F --data-root D` trains F's config with D as its data
    folder, and the run's provenance names F with the SHA-256 of the bytes it read."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(TINY, indent=1))
    out = tmp_path / "r"
    assert main(["train", "--config-file", str(path), "--data-root", str(REPO / "data"),
                 "--out", str(out), "--threads", "1", "--no-progress"]) == 0
    assert "status=ok" in capsys.readouterr().out
    assert read_json(out / "config.json")["data_root"] == str(REPO / "data")
    record = read_json(out / "provenance.json")
    assert record["config_file"] == {"path": str(path), "sha256": file_sha256(path)}


@pytest.mark.parametrize("text, says", [("{not json", "is not valid JSON"),
                                        ("[1, 2]", "must be a JSON object")])
def test_a_bad_config_file_is_one_clear_error(tmp_path, capsys, text, says):
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert main(["train", "--config-file", str(path), "--out", str(tmp_path / "r")]) == 2
    assert says in capsys.readouterr().err
    assert main(["train", "--config-file", str(tmp_path / "none.json"),
                 "--out", str(tmp_path / "r")]) == 2
    assert "none.json" in capsys.readouterr().err
    assert main(["lesam", "glmc", "--run", "x", "--config-file", str(path),
                 "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert "--config-file" in err and len(err.strip().splitlines()) == 1
