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
