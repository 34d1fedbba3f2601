"""A job running longer than a few seconds shows, on the console, how long it has run, its
log's path and the last line of its log (sharpness.runs.console), from Snakemake's own job
events; a finished job, a dry run's job and a short job show nothing."""

from __future__ import annotations

import io
import logging
import time

from sharpness.runs.console import JobWatch, last_line


def _event(event: str, **fields) -> logging.LogRecord:
    record = logging.LogRecord("snakemake", logging.INFO, __file__, 1, "", None, None)
    record.__dict__.update(event=event, **fields)
    return record


def _through_logging(watch: JobWatch, record: logging.LogRecord) -> None:
    """As Snakemake's logger calls it: Handler.handle holds the handler's own lock."""
    watch.handle(record)


def test_a_long_job_shows_its_log_and_what_it_does(tmp_path):
    log = tmp_path / "logs/eos/setting_a.log"
    log.parent.mkdir(parents=True)
    log.write_text("start\n[12:03:41] sweep lr 0.36 (4/6): step 1200, loss 0.0123\n\n")
    out = io.StringIO()
    watch = JobWatch(every=0, after=5, out=out)  # every=0: no thread, beats by hand
    _through_logging(watch, _event("job_info", jobid=3, rule_msg="eos: a setting (a)",
                      rule_name="eos_setting", log=[str(log)]))
    _through_logging(watch, _event("job_info", jobid=4, rule_msg="dry run: never started", log=["x.log"]))
    assert watch.lines(now=time.time() + 24) == []  # described, not started
    _through_logging(watch, _event("job_started", jobs=[3]))
    assert watch.lines() == []  # not running long enough yet
    lines = watch.lines(now=time.time() + 24)
    assert lines[0].startswith("... 0:00:2") and f"eos: a setting (a) | {log}" in lines[0]
    assert lines[1] == "    [12:03:41] sweep lr 0.36 (4/6): step 1200, loss 0.0123"
    watch.jobs[3].started -= 30
    watch.beat()
    assert str(log) in out.getvalue() and "step 1200" in out.getvalue()
    _through_logging(watch, _event("job_finished", job_id=3))
    assert watch.lines(now=time.time() + 100) == []


def test_the_thread_beats_on_its_own(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("epoch 3/10 (30%)\n")
    out = io.StringIO()
    watch = JobWatch(every=0.05, after=0, out=out)
    # Snakemake's order: job_started (the ids), then each job's job_info
    _through_logging(watch, _event("job_started", jobs=[1]))
    _through_logging(watch, _event("job_info", jobid=1, rule_name="train", log=[str(log)]))
    deadline = time.time() + 5
    while "epoch 3/10" not in out.getvalue() and time.time() < deadline:
        time.sleep(0.05)
    assert f"train | {log}" in out.getvalue() and "epoch 3/10 (30%)" in out.getvalue()


def test_last_line_of_a_missing_or_empty_log(tmp_path):
    assert last_line(tmp_path / "none.log") == ""
    (tmp_path / "e.log").write_text("\n\n")
    assert last_line(tmp_path / "e.log") == ""
