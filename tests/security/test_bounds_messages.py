"""Plausible bounds and clear messages.

A value that would run for years is refused while the workflow plans (the schema's upper
bounds); a nested ``--config`` value, which Snakemake reads as text, is refused with the
``--configfile`` overlay that says the same thing; and when Snakemake refuses because another
invocation's job is running (``IncompleteFilesException``, or its lock), the message ends
with the run folder being written, the live process writing it, and that
``--rerun-incomplete`` must wait until it ends (sharpness.runs.lockinfo, ``sharpness locks``).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sharpness.cli import main
from sharpness.config.check import check_command_line, load_schema
from sharpness.errors import ConfigError
from sharpness.jobs import check_workflow_config
from sharpness.runs.lock import lock_path
from sharpness.runs.lockinfo import held_folders, holder_alive, refusal_note
from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, snakemake, write_config

SCHEMA = load_schema(REPO / "workflow/config/config.schema.yaml")
QUICK = yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())
YEARS = 1_000_000_000_000


def _set(config: dict, dotted: str, value) -> dict:
    node = config
    *parents, last = dotted.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(last) if isinstance(node, list) else last] = value
    return config


# --- upper bounds -------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "value", "message"), [
    # a case that was accepted, and would have trained for ever
    ("gradcam.train.epochs", YEARS,
     f"config key gradcam.train.epochs: {YEARS} is greater than the maximum of 10000"),
    ("lesam.base.epochs", 10001, "config key lesam.base.epochs: 10001 is greater than"),
    ("lesam.groups.cifar10_wrn.overrides.max_steps", YEARS,
     "config key lesam.groups.cifar10_wrn.overrides.max_steps"),
    ("eos.defaults.max_steps", YEARS, "config key eos.defaults.max_steps"),
    ("eos.toy.max_steps", YEARS, "config key eos.toy.max_steps"),
    ("eos.defaults.train_size", YEARS, "config key eos.defaults.train_size"),
    ("eos.defaults.flow.max_evals", YEARS, "config key eos.defaults.flow.max_evals"),
    ("minorfirst.l1_maxmargin.steps", YEARS, "config key minorfirst.l1_maxmargin.steps"),
    ("minorfirst.linf_depth.grid_n", YEARS, "config key minorfirst.linf_depth.grid_n"),
    ("minorfirst.cnn_synthetic.steps", YEARS, "config key minorfirst.cnn_synthetic.steps"),
    ("lesam.items.table_robustness.steps", YEARS, "config key lesam.items.table_robustness.steps"),
    ("gradcam.panel.per_class", YEARS, "config key gradcam.panel.per_class"),
    ("bridges.lesam_diagonal.max_steps", YEARS, "config key bridges.lesam_diagonal.max_steps"),
    ("bridges.lesam_diagonal.alpha_grid", [0.1, 1.0, 1e9],
     "config key bridges.lesam_diagonal.alpha_grid[2]: 1000000000.0 is greater than"),
    # counts of runs
    ("gradcam.seeds", list(range(1001)), "config key gradcam.seeds: [0, 1, 2"),
    ("lesam.groups.cifar10_wrn.seeds", list(range(1001)),
     "config key lesam.groups.cifar10_wrn.seeds: [0, 1, 2"),
    ("eos.toy.lrs", [0.1] * 10001, "config key eos.toy.lrs: [0.1, 0.1"),
])
def test_a_value_that_would_run_for_years_is_refused(key, value, message):
    config = _set(copy.deepcopy(QUICK), key, value)
    with pytest.raises(ConfigError) as info:
        check_workflow_config(config, SCHEMA)
    assert message in str(info.value)


#: keys whose value counts work (steps, epochs, examples, samples, points, repeats)
WORK_KEYS = {"epochs", "max_steps", "steps", "warmup_steps", "train_size", "test_size", "n",
             "n_test", "n_examples", "n_alpha", "n_time", "n_check", "n_record", "grid_n",
             "refine", "markers", "max_evals", "trace_samples", "ascent_steps", "avg_samples",
             "rounds", "k", "per_class", "show", "batch_size", "gpus", "loader_workers",
             "probe_batch", "proj_dim", "krylov_dim", "d", "patches", "width", "L"}


def _integer_keys(node, path=""):
    """``(path, schema)`` of every integer-valued property in the schema."""
    if isinstance(node, dict):
        for key, child in (node.get("properties") or {}).items():
            if isinstance(child, dict):
                kinds = child.get("type", [])
                kinds = [kinds] if isinstance(kinds, str) else kinds
                if "integer" in kinds:
                    yield f"{path}.{key}", key, child
        for key, child in node.items():
            if isinstance(child, dict | list):
                yield from _integer_keys(child, f"{path}.{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _integer_keys(child, f"{path}[{i}]")


def test_every_count_of_work_has_an_upper_bound_that_is_described():
    """Every integer key that counts work (a new one too) has a finite maximum, and its
    description says it ("at most ...")."""
    found = [(path, child) for path, key, child in _integer_keys(SCHEMA) if key in WORK_KEYS]
    assert len(found) > 40
    unbounded = [path for path, child in found if "maximum" not in child]
    undescribed = [path for path, child in found if "at most" not in child.get("description", "")]
    assert not unbounded, f"add a maximum to: {unbounded}"
    assert not undescribed, f"say the maximum in the description of: {undescribed}"
    assert SCHEMA["$defs"]["seeds"]["maxItems"] == 1000


def test_the_shipped_profiles_stay_well_inside_the_bounds():
    """Every count of work of every shipped profile, made ten times larger, is still
    accepted: the bounds stop years, not a bigger experiment."""
    from sharpness.config.check import _validator

    def scale(node, key=None):
        if isinstance(node, dict):
            return {k: scale(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [scale(v, key) for v in node]
        if key in WORK_KEYS and isinstance(node, int) and not isinstance(node, bool):
            return node * 10
        return node

    for profile in ("quick", "evidence", "paper"):
        config = yaml.safe_load((REPO / f"workflow/config/{profile}.yaml").read_text())
        too_large = [f"{list(e.absolute_path)}: {e.message}"
                     for e in _validator(SCHEMA).iter_errors(scale(config))
                     if e.validator in ("maximum", "maxItems")]
        assert not too_large, profile


# --- a nested --config value ------------------------------------------------------------

def test_a_nested_command_line_value_read_as_text_says_how_to_pass_it():
    with pytest.raises(ConfigError) as info:
        check_command_line({"gradcam": {"train": {"epochs": "3"}}})
    text = str(info.value)
    assert text.startswith("config key gradcam.train.epochs: given on the command line as "
                           "--config gradcam=..., where Snakemake reads every value inside a "
                           "nested mapping or list as text (here '3', not 3)")
    assert "    gradcam:\n      train:\n        epochs: 3\n" in text
    assert "--configfile my.yaml" in text


@pytest.mark.parametrize("given", [
    {"profile": "quick"}, {"data": {"imagenet": "/data/imagenet"}}, {"x": 3}, {},
])
def test_command_line_values_that_mean_what_they_say_pass(given):
    check_command_line(given)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, repo):
    return copy_workflow(repo, tmp_path_factory.mktemp("bounds"))


@pytest.mark.workflow
def test_snakemake_with_a_nested_config_value_names_the_key_and_the_overlay(workdir, bin_dir):
    """`--config gradcam={train: {epochs: 3}}` (Snakemake reads the nested 3 as text) names
    the key and the --configfile overlay to use, not "'3' is not of type 'integer'", which
    would blame the value."""
    proc = snakemake(bin_dir, workdir, "-n", "--config", "gradcam={train: {epochs: 3}}",
                     check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config key gradcam.train.epochs: given on the command line as --config" in out
    assert "epochs: 3" in out and "--configfile" in out
    assert "is not of type" not in out


@pytest.mark.workflow
def test_snakemake_refuses_years_of_epochs_at_planning(workdir, bin_dir):
    cfg = write_config(workdir, {"gradcam": {"train": {"epochs": YEARS}}})
    proc = snakemake(bin_dir, workdir, "-n", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    assert (f"config key gradcam.train.epochs: {YEARS} is greater than the maximum of 10000"
            in proc.stdout + proc.stderr)


# --- who holds a run folder ---------------------------------------------------------------

HOLD = """
import sys, time
from sharpness.runs.lock import run_lock
with run_lock(sys.argv[1], what="training run"):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path):
    """A live process holding the run-folder lock of ``results/eos/toy`` under a folder
    (``start(root)`` returns it); killed at the end."""
    procs = []

    def start(root: Path) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", HOLD, str(root / "results/eos/toy")],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "held"
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _write_holder(folder: Path, pid: int, host: str | None = None) -> None:
    path = lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": pid, "host": host or socket.gethostname(),
                                "since": "2026-01-01T00:00:00Z", "command": "sharpness train"}))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_held_folders_tell_live_dead_and_remote_holders(tmp_path, holder):
    live = holder(tmp_path)
    _write_holder(tmp_path / "results/lesam/runs/killed", _dead_pid())
    _write_holder(tmp_path / "results/lesam/runs/remote", 4242, host="another-host")
    lock_path(tmp_path / "results/lesam/runs/released").write_text("")  # released cleanly
    held = {Path(h.folder).name: h for h in held_folders([tmp_path / "results"])}
    assert set(held) == {"toy", "killed", "remote"}
    assert (held["toy"].alive, held["killed"].alive, held["remote"].alive) == (True, False, None)
    assert held["toy"].holder["pid"] == live.pid
    assert f"written now by pid {live.pid} on {socket.gethostname()}" in held["toy"].line()
    assert "has ended without releasing it (killed?)" in held["killed"].line()
    assert "on another host: not checked" in held["remote"].line()
    assert holder_alive({"pid": os.getpid(), "host": socket.gethostname()}) is True


def test_the_note_says_which_folder_which_process_and_to_wait(tmp_path, holder):
    live = holder(tmp_path)
    note = " ".join(refusal_note("IncompleteFilesException", [tmp_path / "results"]).split())
    assert f"results/eos/toy: written now by pid {live.pid}" in note
    assert f"still running (pid {live.pid})" in note
    assert "Do not use --rerun-incomplete until it has ended" in note
    live.kill()
    live.wait()
    note = " ".join(refusal_note("IncompleteFilesException", [tmp_path / "results"]).split())
    assert "has ended without releasing it" in note and "rerun with --rerun-incomplete" in note
    assert "Do not use" not in note


def test_sharpness_locks_lists_them(tmp_path, holder, capsys, monkeypatch):
    live = holder(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["locks"]) == 0
    assert capsys.readouterr().out.startswith(f"results/eos/toy: written now by pid {live.pid}")
    assert main(["locks", "nothing-here"]) == 0
    assert "no run folder under nothing-here is being written now" in capsys.readouterr().out


def _mark_incomplete(workdir: Path, output: str) -> None:
    """What Snakemake writes for an output whose job runs (Snakemake 9's file persistence:
    ``.snakemake/incomplete/<urlsafe base64 of the path>``)."""
    (workdir / output).parent.mkdir(parents=True, exist_ok=True)
    (workdir / output).write_text("{}")
    marker = workdir / ".snakemake/incomplete" / base64.urlsafe_b64encode(output.encode()).decode()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"external_jobid": None}))


@pytest.mark.workflow
def test_a_refusal_for_a_running_job_names_the_folder_and_the_process(tmp_path, repo, bin_dir,
                                                                      holder):
    """A case: a second invocation while a job runs stops with Snakemake's
    IncompleteFilesException, whose text says to rerun with --rerun-incomplete (which would
    delete the running job's outputs). Its message now ends with the run folder, the live
    process and to wait; once that process has ended, that --rerun-incomplete is safe."""
    workdir = copy_workflow(repo, tmp_path)
    _mark_incomplete(workdir, "results/eos/toy/toy.json")
    live = holder(workdir)
    proc = snakemake(bin_dir, workdir, "-n", "figures/eos/fig_diagonal.pdf", check=False)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and "IncompleteFilesException" in out
    assert f"results/eos/toy: written now by pid {live.pid}" in out
    assert "Do not use --rerun-incomplete until it has ended" in out
    live.kill()
    live.wait()
    time.sleep(0.1)
    proc = snakemake(bin_dir, workdir, "-n", "figures/eos/fig_diagonal.pdf", check=False)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert f"left by pid {live.pid}" in out and "rerun with --rerun-incomplete" in out


@pytest.mark.workflow
def test_snakemakes_lock_refusal_names_the_folder_and_the_process(tmp_path, repo, bin_dir,
                                                                  holder):
    """Snakemake's own lock (LockException) gets the same note."""
    workdir = copy_workflow(repo, tmp_path)
    live = holder(workdir)
    locks = workdir / ".snakemake/locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text("results/eos/toy/toy.json\n")
    proc = snakemake(bin_dir, workdir, "--cores", "1", "results/eos/toy/toy.json", check=False)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and "LockException" in out
    assert f"results/eos/toy: written now by pid {live.pid}" in out
    assert "Do not use --unlock until it has ended" in out
    assert not (workdir / "results/eos/toy/toy.json").exists()
