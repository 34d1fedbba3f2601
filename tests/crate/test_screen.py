"""The end-of-run screens: what a build made (ledger counts with the profile's evidence level)
and, after a failure, the failed job's log and the command that resumes."""

from __future__ import annotations

import json

from sharpness.crate.screen import failed, failed_jobs, finished

LOG = """Building DAG of jobs...
Error in rule minorfirst_diagonal_figure:
    message: minorfirst: a figure (figures/minorfirst/l1_maxmargin.pdf)
    jobid: 2
    output: figures/minorfirst/l1_maxmargin.pdf
    log: logs/minorfirst/l1_maxmargin_figure.log (check log file(s) for error details)
    shell:
        false
        (one of the commands exited with non-zero exit code)

Error in rule claims:
    jobid: 1
    output: figures/CLAIMS.md

Shutting down, this might take some time.
"""


def _ledger(root, smoke):
    (root / "figures/minorfirst").mkdir(parents=True)
    (root / "figures/minorfirst/l1_maxmargin.pdf").write_bytes(b"%PDF")
    (root / "figures/lesam").mkdir()
    (root / "figures/lesam/table_cifar.md").write_text("| a |\n")
    rows = [{"id": "mf-l1", "paper": "minorfirst", "verdict": "supported", "level": "evidence"},
            {"id": "mf-x", "paper": "minorfirst", "verdict": "not run", "level": ""}]
    (root / "figures/claims.json").write_text(json.dumps({
        "profile": "quick" if smoke else "evidence", "rules": {"smoke": smoke},
        "counts": {"minorfirst": {"supported": 1, "contradicted": 0, "not run": 1}},
        "claims": rows}))


def test_a_finished_smoke_build_says_what_it_made_and_that_it_is_a_smoke_test(tmp_path):
    _ledger(tmp_path, smoke=True)
    (tmp_path / "results").mkdir()
    (tmp_path / "results/build.crate.zip").write_bytes(b"PK")
    screen = finished(tmp_path, ["snakemake", "--cores", "2", "--configfile", "my.yaml"])
    assert "built:    2 figure(s) and table(s) in this run" in screen
    assert "on disk:  1 figures and 1 tables under figures/" in screen
    assert "profile quick: a smoke test" in screen
    line = next(x for x in screen.splitlines() if x.startswith("  minorfirst "))
    assert "1 supported, 1 not run" in line and "1 evidence" in line
    assert "crate:    results/build.crate.zip" in screen
    assert "snakemake --configfile my.yaml --report report.html" in screen
    assert "sharpness audit figures/minorfirst/l1_maxmargin.pdf" in screen


def test_after_one_figure_the_screen_lists_it_and_its_commands_follow_its_target(tmp_path):
    """What this run built is what was written since it started; the report is asked for the
    same target (a report of `all` fails on every figure not built), the crate suggested is
    one of what is on disk, the audit is of the figure built."""
    import os
    import time

    _ledger(tmp_path, smoke=True)
    old = tmp_path / "figures/lesam/table_cifar.md"
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    started = time.time() - 60
    target = "figures/minorfirst/l1_maxmargin.pdf"
    screen = finished(tmp_path, ["snakemake", target, "--cores", "2", "--configfile", "my.yaml"],
                      started=started)
    assert "built:    1 figure(s) and table(s) in this run" in screen
    assert f"\n  {target}\n" in screen and "table_cifar" not in screen.split("on disk")[0]
    assert f"snakemake {target} --configfile my.yaml --report report.html" in screen
    assert "sharpness crate --out results/part.crate.zip" in screen
    assert f"sharpness audit {target}" in screen
    quiet = finished(tmp_path, ["snakemake", target], started=time.time() + 60)
    assert "built:    nothing new" in quiet


def test_an_evidence_build_is_not_called_a_smoke_test_and_a_missing_crate_is_said(tmp_path):
    _ledger(tmp_path, smoke=False)
    screen = finished(tmp_path, ["snakemake"])
    assert "smoke" not in screen and "profile evidence" in screen
    assert "crate:    not built by this run" in screen


def test_a_missing_or_broken_ledger_is_said_not_raised(tmp_path):
    assert "ledger:   none yet" in finished(tmp_path, ["snakemake"])
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures/claims.json").write_text("{")
    assert "cannot be read" in finished(tmp_path, ["snakemake"])


def test_a_failed_build_names_each_failed_job_log_and_the_resume_command(tmp_path):
    assert failed_jobs(LOG) == [
        ("minorfirst_diagonal_figure", ["logs/minorfirst/l1_maxmargin_figure.log"]),
        ("claims", [])]
    log = tmp_path / "snakemake.log"
    log.write_text(LOG)
    screen = failed(str(log), ["snakemake", "--cores", "2", "--configfile", "my file.yaml"])
    assert "rule minorfirst_diagonal_figure: its log logs/minorfirst/l1_maxmargin_figure.log" \
        in screen
    assert "rule claims: no log file" in screen
    assert "snakemake --cores 2 --configfile 'my file.yaml'" in screen
    assert "no job error found" in failed([str(tmp_path / "gone.log")], [])
