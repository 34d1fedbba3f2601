"""A lesam table or figure job knows each run from the run's own record: its group, label,
optimizer, hyper-parameters and seed, never from the config's run list; a folder whose record
is missing, edited or names another run stops the job with the folder's name."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.io import atomic_write_json
from sharpness.lesam.records import MisnamedRun, read_run
from sharpness.runs.provenance import sidecar_path, write_run_provenance
from sharpness.runs.seal import UnverifiedResult


def _run(root: Path, name: str, *, group: str = "main", label: str = "sam", seed: int = 0,
         acc: float = 0.5, tags: bool = True) -> Path:
    """A finished run folder as training leaves it: final.json, and a record of its settings
    that holds the hash of final.json."""
    folder = root / name
    folder.mkdir(parents=True)
    atomic_write_json(folder / "final.json", {"status": "ok", "final_test_acc": acc,
                                              "n_train": 100, "n_test": 50, "epochs": 1})
    cfg = {"dataset": "mnist_embedded", "model": "cnn", "optimizer": label, "seed": seed,
           "opt_hparams": {"rho": 0.05}, "sources": {"opt_hparams.rho": "choice: a test"}}
    if tags:
        cfg["tags"] = {"group": group, "label": label}
    write_run_provenance(folder, params=cfg, seed=seed, outputs=["final.json"])
    return folder


def test_a_run_is_what_its_record_says(tmp_path):
    run = read_run(_run(tmp_path, "main-sam-s1", seed=1), what="test")
    assert (run.group, run.label, run.seed, run.optimizer) == ("main", "sam", 1, "sam")
    assert run.hparams == {"rho": 0.05} and run.final["final_test_acc"] == 0.5


def test_a_folder_named_as_another_run_stops_the_job(tmp_path):
    folder = _run(tmp_path, "main-sam-s1", seed=0)  # the record says seed 0
    with pytest.raises(MisnamedRun, match=r"main-sam-s1 is not used: its record says it is "
                                          r"run main-sam-s0"):
        read_run(folder, what="test")
    with pytest.raises(MisnamedRun, match="names no group, label and seed"):
        read_run(_run(tmp_path, "main-sgd-s0", label="sgd", tags=False), what="test")


def test_a_missing_or_edited_record_stops_the_job(tmp_path):
    folder = _run(tmp_path, "main-sam-s0")
    record = json.loads((folder / "provenance.json").read_text())
    record["params"]["opt_hparams"]["rho"] = 0.5  # edited after the run wrote it
    (folder / "provenance.json").write_text(json.dumps(record))
    with pytest.raises(UnverifiedResult, match="main-sam-s0/provenance.json is not used"):
        read_run(folder, what="test")
    (folder / "provenance.json").unlink()
    with pytest.raises(UnverifiedResult, match="main-sam-s0/provenance.json is missing"):
        read_run(folder, what="test")


def test_a_table_groups_the_runs_it_is_given_by_their_records(tmp_path):
    """No config section: the item's settings and the run folders are all the job gets."""
    runs = [_run(tmp_path, f"main-{lab}-s{seed}", label=lab, seed=seed, acc=acc)
            for lab, seed, acc in (("sgd", 0, 0.4), ("sam", 0, 0.5), ("sam", 1, 0.7))]
    spec = {"title": "T", "data_used": "tiny", "rows": [{"group": "main", "dataset": "MNIST",
                                                          "model": "CNN"}]}
    out = tmp_path / "table_cifar.md"
    assert main(["lesam", "build", "table_cifar", "--params", json.dumps(spec), "--runs",
                 *(str(r / "final.json") for r in runs), "--out", str(out)]) == 0
    with out.with_suffix(".csv").open() as f:
        rows = {r["optimizer"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"SGD", "SAM"}
    assert rows["SAM"]["seeds"] == "2" and float(rows["SAM"]["mean"]) == pytest.approx(60.0)
    assert "SAM: rho=0.05 [choice: a test]" in out.with_suffix(".caption.txt").read_text()
    # each run's record enters the table's record by its id, never by its bytes (its times
    # and host are not content): the same runs give the same table id on any machine
    inputs = json.loads(sidecar_path(out).read_text())["inputs"]
    assert not any(e["path"].endswith("provenance.json") for e in inputs)
    ids = {json.loads((r / "provenance.json").read_text())["id"] for r in runs}
    assert {e["id"] for e in inputs if e["path"].endswith("final.json")} == ids
