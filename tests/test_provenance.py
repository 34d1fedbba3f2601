"""Provenance records and atomic writes."""

from __future__ import annotations

import json

import pytest

from sharpness.cli import main
from sharpness.io import atomic_write_json
from sharpness.runs.audit import audit_lines
from sharpness.runs.environment import code_version
from sharpness.runs.provenance import artifact_record, commit_artifact_record
from sharpness.runs.run_record import RunRecord


def write_artifact_provenance(artifact, **kw):
    """A figure the way :func:`sharpness.plots.save_figure` makes one: the record's id
    stamped into the file, the file written, then the record."""
    record = artifact_record(artifact, **kw)
    artifact.parent.mkdir(parents=True, exist_ok=True)
    artifact.write_bytes(f"%PDF sharpness-provenance:{record['id']}".encode())
    return commit_artifact_record(record)


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
    assert "mnist_embedded sha256=abc" in text and "lr=0.1" in text


def _run(folder, lr, seed=0):
    with RunRecord(folder, params={"lr": lr, "model": "fcn", "steps": 5}, seed=seed,
                   data=[{"name": "mnist_embedded", "sha256": "abc", "file": str(folder)}]):
        atomic_write_json(folder / "sweep.json", {"lr": lr})
    return folder / "sweep.json"


def test_ids_address_the_inputs_content(tmp_path):
    """Two figures drawn from different runs differ in id (their params are equal); drawing
    one again from the same inputs gives the same id; moving the files changes nothing."""
    a = _run(tmp_path / "a", 0.1)
    b = _run(tmp_path / "b", 0.2)
    fig_a = write_artifact_provenance(tmp_path / "f1.pdf", kind="figure",
                                      params={"figure": "fig_phase"}, inputs=[a])
    fig_b = write_artifact_provenance(tmp_path / "f2.pdf", kind="figure",
                                      params={"figure": "fig_phase"}, inputs=[b])
    again = write_artifact_provenance(tmp_path / "f3.pdf", kind="figure",
                                      params={"figure": "fig_phase"}, inputs=[a])
    assert fig_a["id"] != fig_b["id"] and fig_a["id"] == again["id"]
    assert fig_a["inputs"][0]["sha256"] and fig_a["code"]["fingerprint"]
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "sweep.json").write_bytes(a.read_bytes())
    (moved / "provenance.json").write_bytes((tmp_path / "a/provenance.json").read_bytes())
    other = write_artifact_provenance(tmp_path / "f4.pdf", kind="figure",
                                      params={"figure": "fig_phase"}, inputs=[moved / "sweep.json"])
    assert other["id"] == fig_a["id"]


def test_audit_shows_shared_settings_once_then_differences(tmp_path, capsys):
    runs = [_run(tmp_path / f"r{i}", lr) for i, lr in enumerate((0.1, 0.2, 0.4))]
    write_artifact_provenance(tmp_path / "fig.pdf", kind="figure", inputs=runs)
    text = "\n".join(audit_lines(tmp_path / "fig.pdf"))
    assert "shared by all 3 inputs" in text
    assert text.count("model=") == 1 and text.count("steps=5") == 1  # shared: shown once
    assert "lr=0.1" in text and "lr=0.2" in text and "lr=0.4" in text
    if code_version()["dirty"]:
        assert "!!! DIRTY TREE" in text
    assert main(["audit", "--json", str(tmp_path / "fig.pdf")]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert [c["record"]["params"]["lr"] for c in tree["inputs"]] == [0.1, 0.2, 0.4]


def test_audit_flags_a_dirty_tree_loudly(tmp_path, monkeypatch):
    import sharpness.runs.provenance as prov

    monkeypatch.setattr(prov, "code_version", lambda: {"git_commit": "abc123", "dirty": True,
                                                       "dirty_files": ["src/x.py"]})
    write_artifact_provenance(tmp_path / "fig.pdf", kind="figure")
    text = "\n".join(audit_lines(tmp_path / "fig.pdf"))
    assert "!!! DIRTY TREE" in text and "src/x.py" in text


def test_diff_says_which_input_and_param_changed(tmp_path, capsys):
    a = _run(tmp_path / "a", 0.1)
    write_artifact_provenance(tmp_path / "v1" / "fig.pdf", kind="figure", inputs=[a])
    assert main(["diff", str(tmp_path / "v1/fig.pdf"), str(tmp_path / "v1/fig.pdf")]) == 0
    assert "same id" in capsys.readouterr().out
    _run(tmp_path / "a", 0.3)  # the run is redone with another setting, the figure redrawn
    write_artifact_provenance(tmp_path / "v2" / "fig.pdf", kind="figure", inputs=[a],
                              params={"dpi": 300})
    assert main(["diff", str(tmp_path / "v1/fig.pdf"), str(tmp_path / "v2/fig.pdf")]) == 1
    out = capsys.readouterr().out
    assert "params:   dpi: \"<unset>\" -> 300" in out
    assert f"input:    {a}: sha256" in out
    assert main(["diff", "--json", str(tmp_path / "a"), str(tmp_path / "v1/fig.pdf")]) == 1
    diff = json.loads(capsys.readouterr().out)
    assert diff["kind"] == {"a": "run", "b": "figure"}
