"""A finished result removed (a forced rerun) starts its job's runs over; a cut job, which
never sealed its result, keeps its run folders to resume from (sharpness.runs.restart)."""

from __future__ import annotations

from sharpness.runs.cache import read_key
from sharpness.runs.restart import removed_result, start_over_if_removed
from sharpness.runs.seal import FILES_FIELD, seal


def _folder(tmp_path, sealed: bool):
    (tmp_path / "runs" / "lr_1").mkdir(parents=True)
    (tmp_path / "runs" / "lr_1" / "checkpoint.pt").write_text("state")
    (tmp_path / "sweep.json").write_text("{}")
    if sealed:
        seal(tmp_path, "sweep.json")
    return tmp_path


def test_a_removed_finished_result_deletes_the_run_folders(tmp_path, caplog):
    folder = _folder(tmp_path, sealed=True)
    assert not removed_result(folder, "sweep.json")  # still there: nothing removed
    (folder / "sweep.json").unlink()
    assert removed_result(folder, "sweep.json")
    assert start_over_if_removed(folder, "sweep.json", ("runs", "flow"), what="setting x")
    assert not (folder / "runs").exists()
    assert "sweep.json" not in (read_key(folder) or {}).get(FILES_FIELD, {})
    assert "setting x" in caplog.text and "removing runs" in caplog.text
    # forgotten: a second call (the job cut again before its end) resumes
    (folder / "runs").mkdir()
    assert not start_over_if_removed(folder, "sweep.json", ("runs",), what="setting x")
    assert (folder / "runs").is_dir()


def test_a_cut_job_never_sealed_its_result_and_keeps_its_runs(tmp_path):
    folder = _folder(tmp_path, sealed=False)
    (folder / "sweep.json").unlink()  # a half-run job's output, deleted by the workflow
    assert not removed_result(folder, "sweep.json")
    assert not start_over_if_removed(folder, "sweep.json", ("runs",), what="setting x")
    assert (folder / "runs" / "lr_1" / "checkpoint.pt").is_file()


def test_an_empty_folder_is_a_first_run(tmp_path):
    assert not start_over_if_removed(tmp_path / "absent", "runs.json", ("a",), what="group")
