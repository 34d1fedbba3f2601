"""A setting whose finished ``sweep.json`` was removed (what a forced rerun does first) trains
its runs again instead of reusing them; with ``sweep.json`` in place its runs are reused."""

from __future__ import annotations

import pytest

from sharpness.eos.sweep import run_setting
from sharpness.io import read_json

#: a short flow (loss 0.5 -> 0.3, about 130 gradients): the test is about reuse and restart, not
#: about where the flow ends
SMALL = {
    "label": "small", "dataset": "mnist_embedded", "train_size": 32, "test_size": 50,
    "model": "fcn", "model_kwargs": {"hidden": 8, "activation": "tanh", "alpha": 0.3},
    "loss": "mse", "loss_goal": 0.3, "max_steps": 60, "sharpness_every": 20,
    "log_every": 5, "device": "cpu", "lr_factors": [0.5],
    "measures": {"trace_samples": 2, "ascent_steps": 1, "avg_samples": 2},
}


def _run(out):
    (run,) = (out / "runs").glob("lr_*")
    return run


@pytest.mark.e2e  # runs a sweep twice
def test_a_removed_sweep_starts_the_runs_over(tmp_path, capfd):
    first = run_setting(SMALL, tmp_path, threads=1)
    marker = _run(tmp_path) / "stale-marker"
    marker.write_text("left by the earlier run")
    capfd.readouterr()
    again = run_setting(SMALL, tmp_path, threads=1)  # sweep.json there: runs reused
    reused = capfd.readouterr().err
    assert "step 1/60" not in reused and "gradient flow reused" in reused and marker.exists()
    (tmp_path / "sweep.json").unlink()  # as -R/--forcerun does before it reruns the job
    forced = run_setting(SMALL, tmp_path, threads=1)
    trained = capfd.readouterr().err
    assert "step 1/60" in trained and "gradient flow reused" not in trained
    assert not marker.exists()  # the run folders were deleted, not resumed
    assert read_json(_run(tmp_path) / "provenance.json")["resumed_from_step"] is None
    for result in (again, forced):  # the same numbers, trained again or not
        assert [r["train_loss"] for r in result["rows"]] == [r["train_loss"] for r in first["rows"]]
        assert result["s_gf"] == first["s_gf"]


@pytest.mark.e2e  # runs two tiny settings, cuts the job, runs it again
def test_a_cut_run_many_job_resumes_the_settings_it_finished(tmp_path, monkeypatch):
    """`eos run-many` (the ablation variants in one job) seals its settings' results together,
    when the last has finished: a job killed while it runs its second setting leaves the
    first one's ``sweep.json`` unsealed, so when Snakemake deletes the job's outputs before
    running it again, the first setting resumes (its run folders kept) instead of starting
    over. Once the whole job has finished, a removed result is a forced rerun again."""
    import json

    from sharpness.cli import main
    from sharpness.commands import eos as eos_command
    from sharpness.runs.restart import removed_result

    settings = {"a": SMALL, "b": {**SMALL, "label": "b", "lr_factors": [0.6]}}
    argv = ["eos", "run-many", "--params", json.dumps(settings), "--out", str(tmp_path),
            "--threads", "1"]
    whole = eos_command.run_one

    def killed_at_b(params, out, *args, **kwargs):
        if out.name == "b":
            raise KeyboardInterrupt  # the job is killed while it runs setting b
        whole(params, out, *args, **kwargs)

    monkeypatch.setattr(eos_command, "run_one", killed_at_b)
    assert main(argv) == 130  # what Ctrl-C gives: interrupted, run again to resume
    marker = _run(tmp_path / "a") / "kept-marker"
    marker.write_text("written before the cut")
    (tmp_path / "a" / "sweep.json").unlink()  # Snakemake deletes a cut job's outputs first
    assert not removed_result(tmp_path / "a", "sweep.json")
    monkeypatch.setattr(eos_command, "run_one", whole)
    assert main(argv) == 0
    assert marker.exists()  # setting a resumed: its run folder was not deleted
    for name in settings:  # both sealed now: removing one is a forced rerun
        (tmp_path / name / "sweep.json").unlink()
        assert removed_result(tmp_path / name, "sweep.json")


def test_a_resumed_run_logs_the_uncut_runs_sharpness_bit_for_bit(tmp_path):
    """The sharpness hook's Lanczos warm start is in the checkpoint: a GD run of a setting
    killed after its checkpoint at step 10 and resumed measures from the vector the uncut run
    had, so every row, sharpness and its Hessian-vector products included, is the uncut
    run's."""
    from dataclasses import replace

    from sharpness.eos.setting import resolve_setting
    from sharpness.eos.sweep import engine_config, run_hooks
    from sharpness.train import train
    from tests.killing import Killed, kill_at

    setting = resolve_setting({**SMALL, "loss_goal": 1e-6, "max_steps": 30,
                               "sharpness_every": 5, "checkpoint_every": 10})
    cfg = engine_config(setting, 0.05, "data")
    train(cfg, tmp_path / "uncut", hooks=run_hooks(setting))
    cut = tmp_path / "cut"
    with pytest.raises(Killed):
        train(cfg, cut, hooks=replace(run_hooks(setting), on_step_end=kill_at(17).on_step_end))
    train(cfg, cut, hooks=run_hooks(setting))  # a new hook: its warm start from the checkpoint
    assert read_json(cut / "provenance.json")["resumed_from_step"] == 10
    rows = (cut / "metrics.jsonl").read_text().splitlines()
    assert sum('"sharpness"' in row for row in rows[3:]) >= 4  # measured after the resume
    assert (cut / "metrics.jsonl").read_bytes() == (tmp_path / "uncut/metrics.jsonl").read_bytes()


def test_the_warm_start_survives_a_weights_only_checkpoint_and_a_malformed_one_starts_cold(
        tmp_path):
    import numpy as np
    import torch

    from sharpness.eos.sweep import SharpnessHook
    from sharpness.train.checkpoint import safe_load

    hook = SharpnessHook(1e-3, 0)
    hook.v0 = np.linspace(-1.0, 1.0, 7)
    torch.save({"sharpness_hook": hook.state_dict()}, tmp_path / "checkpoint.pt")
    resumed = SharpnessHook(1e-3, 0)
    resumed.load_state_dict(safe_load(tmp_path / "checkpoint.pt")["sharpness_hook"])
    assert resumed.v0.dtype == hook.v0.dtype and np.array_equal(resumed.v0, hook.v0)
    for malformed in ({"v0": "not a vector"}, {"v0": [1.0, 2.0]}, {}, None):
        resumed.load_state_dict(malformed)
        assert resumed.v0 is None
