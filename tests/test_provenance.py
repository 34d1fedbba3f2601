"""Provenance records and atomic writes."""

from __future__ import annotations

import json

import pytest

from sharpness.io import atomic_write_json
from sharpness.provenance import RunRecord, audit_lines, write_artifact_provenance


def test_run_record_statuses(tmp_path):
    with RunRecord(tmp_path / "ok", params={"a": 1}, seed=3):
        running = json.loads((tmp_path / "ok/provenance.json").read_text())
        assert running["status"] == "running"
    done = json.loads((tmp_path / "ok/provenance.json").read_text())
    assert done["status"] == "ok" and done["seed"] == 3 and done["params"] == {"a": 1}
    assert done["code"]["git_commit"] and "torch" in done["packages"]

    with RunRecord(tmp_path / "div", params={}) as rec:
        rec.set_status("diverged", diverged_at_step=17)
    assert json.loads((tmp_path / "div/provenance.json").read_text())["diverged_at_step"] == 17

    with pytest.raises(RuntimeError), RunRecord(tmp_path / "bad", params={}):
        raise RuntimeError("boom")
    failed = json.loads((tmp_path / "bad/provenance.json").read_text())
    assert failed["status"] == "failed" and "boom" in failed["error"]


def test_same_settings_same_id(tmp_path):
    a = write_artifact_provenance(tmp_path / "a.pdf", kind="figure", params={"x": [1, 2]})
    b = write_artifact_provenance(tmp_path / "b.pdf", kind="figure", params={"x": [1, 2]})
    c = write_artifact_provenance(tmp_path / "c.pdf", kind="figure", params={"x": [1, 3]})
    assert a["id"] == b["id"] != c["id"]


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "x.json"
    atomic_write_json(path, {"v": 1})
    with pytest.raises(TypeError):
        atomic_write_json(path, {"v": object()})
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_audit_lists_stand_ins_and_inputs(tmp_path):
    with RunRecord(tmp_path / "run", params={"lr": 0.1}, seed=0,
                   data=[{"name": "mnist_embedded", "sha256": "abc"}],
                   stand_ins=["MNIST-on-CIFAR for SVHN"]):
        pass
    write_artifact_provenance(tmp_path / "fig.pdf", kind="figure", inputs=[tmp_path / "run"])
    text = "\n".join(audit_lines(tmp_path / "fig.pdf"))
    assert "STAND-IN: MNIST-on-CIFAR for SVHN" in text
    assert "mnist_embedded sha256=abc" in text and '"lr": 0.1' in text
