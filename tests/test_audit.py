"""Provenance that names its content and an audit that checks the files themselves: folder
inputs in the id, records written after their files (and removed when a job fails), stamps
and hashes compared with the record, inputs re-hashed, orphaned records and interrupted runs
flagged, and the settings a run used shown as YAML."""

from __future__ import annotations

import datetime
import json
import shutil
import socket
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from sharpness.cli import main  # noqa: E402
from sharpness.io import atomic_write_json, read_json  # noqa: E402
from sharpness.plots.save import save_figure  # noqa: E402
from sharpness.runs.audit import audit_report  # noqa: E402
from sharpness.runs.provenance import (  # noqa: E402
    sidecar_path,
    write_artifact_provenance,
    write_run_provenance,
)
from sharpness.runs.run_record import RunRecord  # noqa: E402
from sharpness.runs.signing import sign
from sharpness.runs.state import untrack  # noqa: E402


def _run(folder, lr=0.1, loss=0.5):
    """A finished run folder: its record and a file of numbers."""
    with RunRecord(folder, params={"lr": lr, "model": {"depth": 2}}, seed=0):
        atomic_write_json(folder / "sweep.json", {"lr": lr, "loss": loss})
    return folder


def _figure(out, inputs, value=1.0):
    """A real figure through :func:`save_figure` (PDF, PNG, CSV, stamped, then the record)."""
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, value])
    return save_figure(fig, out, rows=[{"x": 1, "y": value}], caption="test figure",
                       inputs=inputs, params={"figure": "fig_test"})


def test_folder_input_numbers_changed_change_the_id_and_diff_names_it(tmp_path, capsys):
    """A run folder given as a figure's input: a number changed in one of its files gives the
    figure a new id, and `sharpness diff` exits 1 naming that folder."""
    run = _run(tmp_path / "results/run")
    before = _figure(tmp_path / "v1/fig.pdf", [run])
    again = _figure(tmp_path / "v1b/fig.pdf", [run])
    assert again["id"] == before["id"]  # same content, same id
    atomic_write_json(run / "sweep.json", {"lr": 0.1, "loss": 0.25})  # its numbers changed
    after = _figure(tmp_path / "v2/fig.pdf", [run])
    assert after["id"] != before["id"]
    assert before["inputs"][0]["sha256"] != after["inputs"][0]["sha256"]
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "v1/fig.pdf"), str(tmp_path / "v2/fig.pdf")]) == 1
    assert f"input:    {run}: sha256" in capsys.readouterr().out


def test_folder_input_id_does_not_depend_on_where_or_when(tmp_path):
    """A copy of the run folder elsewhere (its record's times aside) gives the same id; its
    temporary and hidden files (locks, heartbeats) are not content."""
    run = _run(tmp_path / "a/run")
    copy = tmp_path / "b/run"
    shutil.copytree(run, copy)
    (copy / ".lock").write_text("12345")
    (copy / ".sweep.json.x.tmp").write_text("half")
    (copy / "timing.jsonl").write_text('{"epoch": 1, "seconds": 3.2}\n')
    fig_a = _figure(tmp_path / "fa/fig.pdf", [run])
    fig_b = _figure(tmp_path / "fb/fig.pdf", [copy])
    assert fig_a["id"] == fig_b["id"]


def test_run_record_inputs_enter_its_id(tmp_path):
    """A run that reads other runs (Grad-CAM maps of trained models) names them by content."""
    run = _run(tmp_path / "trained")
    first = write_run_provenance(tmp_path / "maps1", params={"p": 1}, inputs=[run])
    atomic_write_json(run / "sweep.json", {"lr": 0.1, "loss": 9.0})
    second = write_run_provenance(tmp_path / "maps2", params={"p": 1}, inputs=[run])
    assert first["inputs"][0]["id"] and first["id"] != second["id"]


def test_audit_catches_an_older_pdf_copied_over_the_current_one(tmp_path, capsys):
    _figure(tmp_path / "old/fig.pdf", [_run(tmp_path / "run_then", lr=0.2)], value=1.0)
    current = _figure(tmp_path / "new/fig.pdf", [_run(tmp_path / "run")], value=2.0)
    lines, problems = audit_report(tmp_path / "new/fig.pdf")
    assert problems == []  # the current files are the ones recorded
    shutil.copyfile(tmp_path / "old/fig.pdf", tmp_path / "new/fig.pdf")
    lines, problems = audit_report(tmp_path / "new/fig.pdf")
    text = "\n".join(lines)
    assert "STAMP MISMATCH" in text and f"its record is {current['id']}" in text
    assert "FILE CHANGED" in text
    assert main(["audit", str(tmp_path / "new/fig.pdf")]) == 1
    assert "check(s) failed" in capsys.readouterr().err


def test_audit_flags_an_orphaned_record_of_a_failed_figure_job(tmp_path):
    """Snakemake removes a failed job's PDF; a record left beside it must not say ok."""
    run = _run(tmp_path / "run")
    _figure(tmp_path / "figs/fig.pdf", [run])
    (tmp_path / "figs/fig.pdf").unlink()
    lines, problems = audit_report(tmp_path / "figs/fig.pdf")
    status = next(line for line in lines if line.startswith("  status:"))  # the figure's
    assert "ORPHANED" in status and " ok" not in status.split("(")[0]
    assert any("ORPHANED" in p and "fig.pdf" in p for p in problems)
    assert main(["audit", str(tmp_path / "figs/fig.pdf")]) == 1


def test_audit_checks_inputs_still_exist_with_the_recorded_hashes(tmp_path):
    run = _run(tmp_path / "run")
    numbers = run / "sweep.json"
    _figure(tmp_path / "f1/fig.pdf", [numbers])
    _figure(tmp_path / "f2/fig.pdf", [run])
    assert audit_report(tmp_path / "f1/fig.pdf")[1] == []
    atomic_write_json(numbers, {"lr": 0.1, "loss": 0.3})
    for fig in ("f1", "f2"):  # a file input and a folder input
        problems = audit_report(tmp_path / fig / "fig.pdf")[1]
        assert any("INPUT CHANGED" in p for p in problems), problems
    shutil.rmtree(run)
    problems = audit_report(tmp_path / "f2/fig.pdf")[1]
    assert any("INPUT MISSING" in p and str(run) in p for p in problems), problems


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _running(folder, owner=None, **fields):
    """A run record left ``running`` (the process was killed before it could end it): its
    ``owner`` and ``heartbeat`` replaced by the given ones (``owner=None``: none at all)."""
    record = RunRecord(folder, params={"lr": 0.1}, seed=0)
    record.__enter__()
    untrack(record)  # its process is gone: no loop renews its heartbeat
    data = json.loads(record.path.read_text())
    data.pop("owner", None)
    data.pop("heartbeat", None)
    if owner is not None:
        data["owner"] = owner
    data.update(fields)
    record.path.write_text(json.dumps(sign(data)))  # as the process itself would have signed it
    return folder


def test_audit_says_interrupted_for_a_running_run_whose_owner_is_dead(tmp_path, capsys):
    dead = _running(tmp_path / "dead", owner={"pid": _dead_pid(), "host": socket.gethostname()},
                    heartbeat=datetime.datetime.now(datetime.UTC).isoformat())
    lines, problems = audit_report(dead)
    assert "status:   interrupted" in "\n".join(lines)
    assert any("INTERRUPTED" in p for p in problems)
    assert main(["audit", str(dead)]) == 1
    capsys.readouterr()
    assert main(["audit", "--json", str(dead)]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "interrupted"
    # another host: the heartbeat's age decides (here years old)
    stale = _running(tmp_path / "stale", owner={"pid": 1, "host": "elsewhere"},
                     heartbeat="2000-01-01T00:00:00+00:00")
    assert "status:   interrupted" in "\n".join(audit_report(stale)[0])


def test_audit_keeps_running_for_a_live_owner_or_an_old_record(tmp_path):
    import os

    alive = _running(tmp_path / "alive", owner={"pid": os.getpid(), "host": socket.gethostname()},
                     heartbeat=datetime.datetime.now(datetime.UTC).isoformat())
    lines, problems = audit_report(alive)
    assert "status:   running" in "\n".join(lines) and problems == []
    # no owner, no heartbeat: nothing says whether it progresses: unknown, and said so
    old = _running(tmp_path / "old", started=None)
    lines, problems = audit_report(old)
    assert "status:   unknown" in "\n".join(lines)
    assert any(p.startswith(f"{old}: UNKNOWN") and "no heartbeat" in p for p in problems)


def test_failed_job_removes_the_stale_record_of_its_output(tmp_path, capsys):
    """A job that fails leaves no record vouching for its output (Snakemake removed the file)."""
    out = tmp_path / "eval/robustness.json"
    out.parent.mkdir()
    out.write_text("[]")
    write_artifact_provenance(out, kind="evaluation")  # an earlier, successful build
    assert sidecar_path(out).exists()
    out.unlink()  # Snakemake removes the output before the job runs again
    assert main(["lesam", "eval", "robustness", "--params", "{not json", "--out",
                 str(out)]) == 2
    assert not sidecar_path(out).exists()
    assert "removed the stale record" in capsys.readouterr().err


def test_failed_figure_leaves_no_record(tmp_path, monkeypatch):
    """The record is written last: a figure whose PNG fails to write has none."""
    run = _run(tmp_path / "run")
    fig, ax = plt.subplots()
    real = fig.savefig

    def broken(handle, format=None, **kw):
        if format == "png":
            raise OSError("disk full")
        return real(handle, format=format, **kw)

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(OSError, match="disk full"):
        save_figure(fig, tmp_path / "f/fig.pdf", rows=[{"x": 1}], caption="c", inputs=[run])
    assert not sidecar_path(tmp_path / "f/fig.pdf").exists()


def test_claims_ledger_writes_its_record(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    assert main(["claims", "build", "--figures", str(figures), "--profile", "quick"]) == 0
    record = read_json(figures / "CLAIMS.provenance.json")
    assert record["kind"] == "ledger"
    assert sorted(record["output_sha256"]) == sorted(
        str(figures / n) for n in ("CLAIMS.md", "claims.csv", "claims.json"))
    assert audit_report(figures / "CLAIMS.md")[1] == []


def test_audit_settings_prints_the_resolved_settings_as_yaml(tmp_path, capsys):
    params = {"lr": 0.05, "optimizer": {"name": "lesam", "sigma": 0.1},
              "epochs": 2, "model_kwargs": {"channels": [4, 8]}}
    with RunRecord(tmp_path / "run", params=params, seed=3):
        pass
    capsys.readouterr()
    assert main(["audit", str(tmp_path / "run"), "--settings"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# settings of {tmp_path / 'run'}: run ")
    assert yaml.safe_load(out) == {**params, "seed": 3}


def test_audit_scan_flags_orphaned_records_across_a_folder(tmp_path, capsys):
    """`audit --scan`: every record under a folder, one line each; the sidecar of a figure
    that is gone and a run left running by a dead process are named, the rest pass."""
    run = _run(tmp_path / "results/run")
    _figure(tmp_path / "figures/kept.pdf", [run])
    _figure(tmp_path / "figures/gone.pdf", [run])
    (tmp_path / "figures/gone.pdf").unlink()
    _running(tmp_path / "results/killed", owner={"pid": _dead_pid(), "host": socket.gethostname()})
    capsys.readouterr()
    assert main(["audit", "--scan", str(tmp_path / "results"), str(tmp_path / "figures")]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert any(line.startswith("ok") and line.endswith(str(run)) for line in lines)
    assert any(line.startswith("ok") and "kept.pdf" in line for line in lines)
    assert any(line.startswith("FAIL") and "gone.pdf" in line for line in lines)
    assert any(line.startswith("FAIL") and "interrupted" in line for line in lines)
    assert "ORPHANED" in err and "INTERRUPTED" in err
    (tmp_path / "figures/gone.provenance.json").unlink()
    shutil.rmtree(tmp_path / "results/killed")
    assert main(["audit", "--scan", str(tmp_path / "results"), str(tmp_path / "figures")]) == 0
