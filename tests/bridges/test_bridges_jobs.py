"""The bridges jobs of the build's plan (sharpness.bridges.jobs) and the run commands that read
their files.

The quick profile's plan has each bridge's outputs (its run files and folders,
one run folder per optimizer of sam_eos, each figure's PDF/PNG/CSV); a run's file holds its
``bridges.<bridge>`` section, which ``sharpness bridges <bridge> run --config-file`` reads and
records (path and SHA-256) in the run's provenance; sam-eos's data folder is ``--data-root``."""

from __future__ import annotations

import hashlib
import json

import pytest

from sharpness.cli import main
from sharpness.config.profiles import load_profile
from sharpness.jobs import build_plan
from sharpness.jobs.files import config_text
from tests.conftest import REPO


@pytest.fixture(scope="module")
def quick() -> dict:
    return load_profile([], REPO / "workflow/config/quick.yaml")


def test_the_plan_has_each_bridges_outputs(quick):
    plan = build_plan(quick)
    # the sweep alone: its flow and run folders are not outputs, so a cut sweep resumes
    assert plan.job("bridges_sam_eos_run", "sam_eos").outputs == (
        "results/bridges/sam_eos/sweep.json",)
    assert plan.job("bridges_lesam_diagonal_run", "lesam_diagonal").outputs == (
        "results/bridges/lesam_diagonal/arrays.npz", "results/bridges/lesam_diagonal/summary.json")
    for bridge in ("lesam_diagonal", "sam_eos"):
        run_job = plan.job(f"bridges_{bridge}_run", bridge)
        assert run_job.config == quick["bridges"][bridge]  # its config section
        assert run_job.config_file == f"results/bridges/configs/{bridge}.json"
        assert run_job.config_file in run_job.inputs
        figure = plan.job(f"bridges_{bridge}_figure", bridge)
        assert figure.inputs == run_job.outputs[:1] and figure.config_file is None
        assert figure.outputs == tuple(f"figures/bridges/{bridge}.{k}"
                                       for k in ("pdf", "png", "csv"))


def test_sam_eos_run_reads_its_file_and_the_data_folder(tmp_path, monkeypatch):
    """The file's settings with ``--data-root`` as the data folder, and the file (path and
    SHA-256) handed to the run's record (the sweep itself is replaced: test_sam_eos runs it)."""
    import sharpness.bridges.sam_eos as sam_eos

    seen = {}

    def fake(params, out, threads=None, config_file=None):
        seen.update(params=params, config_file=config_file)
        return {}

    monkeypatch.setattr(sam_eos, "run_sweep", fake)
    path = tmp_path / "sam_eos.json"
    path.write_text(config_text({"optimizers": [{"name": "gd", "hparams": {}}]}))
    assert main(["bridges", "sam-eos", "run", "--config-file", str(path), "--data-root",
                 "my data", "--out", str(tmp_path / "run")]) == 0
    assert seen["params"].data_root == "my data"
    assert [o["name"] for o in seen["params"].optimizers] == ["gd"]
    assert seen["config_file"] == {"path": str(path),
                                   "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def test_lesam_diagonal_run_records_its_file(tmp_path, monkeypatch):
    import numpy as np

    import sharpness.bridges.lesam_diagonal as lesam_diagonal

    monkeypatch.setattr(lesam_diagonal, "compute", lambda p: (
        {"x": np.zeros(2)}, {"maps": {"m": {"counts": {"a": 1}}}, "rho": p.rho}))
    path = tmp_path / "lesam_diagonal.json"
    path.write_text(config_text({"rho": 0.25}))
    out = tmp_path / "run"
    assert main(["bridges", "lesam-diagonal", "run", "--config-file", str(path),
                 "--out", str(out)]) == 0
    record = json.loads((out / "provenance.json").read_text())
    assert record["config_file"] == {"path": str(path),
                                     "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert record["params"]["rho"] == 0.25
    assert json.loads((out / "summary.json").read_text())["rho"] == 0.25
