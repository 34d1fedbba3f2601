"""SAM/LE-SAM edge-of-stability sweep: diverged runs are recorded; edges and thresholds."""

import math

import pytest

from sharpness.bridges.sam_eos import SamEosParams, edge_for, run_sweep, sam_edge, thresholds
from sharpness.errors import ConfigError

#: runs SAM-at-the-edge sweeps end to end: second tier
pytestmark = pytest.mark.e2e


def test_sam_edge_sits_below_two_over_eta_and_tends_to_it():
    eta = 0.1
    for g in (1e-3, 0.1, 10.0):
        assert sam_edge(g, eta, 0.05) < 2 / eta
    assert math.isclose(sam_edge(1.0, eta, 1e-9), 2 / eta, rel_tol=1e-6)
    # LE-SAM unclipped: rho_t = sigma / |g|
    assert math.isclose(edge_for({"name": "lesam", "hparams": {"sigma": 0.01, "rho_max": None}},
                                 0.5, eta), sam_edge(0.5, eta, 0.02), rel_tol=1e-12)
    assert edge_for({"name": "gd"}, 0.5, eta) == 2 / eta


def test_thresholds_bracket_the_first_failure():
    rows = [{"optimizer": "sam", "lr": lr, "converged": c, "diverged": d}
            for lr, c, d in ((0.05, False, False), (0.1, True, False), (0.2, True, False), (0.4, False, False),
                             (0.8, False, True))]
    th = thresholds(rows, ["sam"])["sam"]  # the slow run at 0.05 is not a failure
    assert th == {"last_ok": 0.2, "first_fail": 0.4, "first_diverged": 0.8}
    assert thresholds(rows[:3], ["sam"])["sam"]["first_fail"] is None


def test_unknown_settings_fail_with_the_key():
    with pytest.raises(ConfigError, match="bogus"):
        SamEosParams.from_dict({"bogus": 1})
    with pytest.raises(ConfigError, match="name"):
        SamEosParams.from_dict({"optimizers": [{"name": "adam"}]})


def test_sweep_records_diverged_runs(tmp_path):
    """A learning rate far above eta_c diverges: the run is kept with status 'diverged'."""
    p = SamEosParams.from_dict({
        "setting": {"dataset": "mnist_embedded", "train_size": 32, "test_size": 50,
                    "model": "fcn", "width": 0.05, "loss": "mse", "loss_goal": 0.4,
                    "max_steps": 30, "sharpness_every": 0, "log_every": 10,
                    "checkpoint_every": 100, "device": "cpu",
                    "flow": {"rtol": 1e-2}, "lr_factors": [0.5, 60.0]},
        "optimizers": [{"name": "gd"}, {"name": "sam", "hparams": {"rho": 0.05}},
                       {"name": "lesam", "hparams": {"sigma": 0.01, "rho_max": 0.1,
                                                     "schedule": "fractions",
                                                     "warmup_frac": 0.0, "anneal_frac": 0.0}}],
    })
    summary = run_sweep(p, tmp_path / "sweep", threads=1)
    rows = summary["rows"]
    assert len(rows) == 6
    for name in ("gd", "sam", "lesam"):
        slow, fast = sorted((r for r in rows if r["optimizer"] == name), key=lambda r: r["lr"])
        assert not slow["diverged"] and slow["status"] == "ok"
        assert fast["diverged"] and fast["status"] == "diverged"
        assert fast["diverged_step"] is not None and fast["diverged_step"] <= 30
        assert summary["thresholds"][name]["first_diverged"] == fast["lr"]
        assert "sharpness" in slow and "sharpness" not in fast
    assert (tmp_path / "sweep" / "provenance.json").exists()
    # the figure draws from the sweep alone: one CSV row per (optimizer, learning rate),
    # diverged runs kept as rows with their status
    import csv

    from sharpness.bridges.sam_eos_plot import plot

    plot(tmp_path / "sweep", tmp_path / "fig" / "sam_eos.pdf")
    with (tmp_path / "fig" / "sam_eos.csv").open() as handle:
        drawn = list(csv.DictReader(handle))
    assert sorted((r["optimizer"], r["status"]) for r in drawn) == sorted(
        (r["optimizer"], r["status"]) for r in rows)
    assert (tmp_path / "fig" / "sam_eos.png").stat().st_size > 0
    assert "eta_c" in (tmp_path / "fig" / "sam_eos.caption.txt").read_text()


#: a loss goal of 0.4 from an initial 0.62: a short flow (about 160 gradients) with the same
#: s_GF as a longer one, one run that converges and one that diverges
TINY_SETTING = {"dataset": "mnist_embedded", "train_size": 32, "test_size": 50, "model": "fcn",
                "width": 0.05, "loss": "mse", "loss_goal": 0.4, "max_steps": 30,
                "sharpness_every": 0, "log_every": 10, "checkpoint_every": 100, "device": "cpu",
                "flow": {"rtol": 1e-2}, "lr_factors": [0.5, 60.0]}


def _classes(rows):
    keys = ("lr", "status", "reason", "converged", "diverged", "steps")
    return [{k: r[k] for k in keys} for r in sorted(rows, key=lambda r: r["lr"])]


def test_bridge_gd_runs_are_classified_like_the_eos_sweep(tmp_path):
    """Same setting, same GD trajectory: the eos sweep row and the bridge row agree."""
    from sharpness.eos.sweep import run_setting

    eos = run_setting(dict(TINY_SETTING), tmp_path / "eos", threads=1)
    bridge = run_sweep(SamEosParams.from_dict({"setting": dict(TINY_SETTING),
                                               "optimizers": [{"name": "gd"}]}),
                       tmp_path / "bridge", threads=1)
    assert _classes(bridge["rows"]) == _classes(eos["rows"])
    assert {r["status"] for r in eos["rows"]} == {"ok", "diverged"}


def test_blow_up_rows_carry_each_runs_own_status_in_both(tmp_path, monkeypatch):
    """Both sweeps copy each run's own status, reason and step (the engine applies the one
    divergence rule, sharpness.runs.state); neither reclassifies a run behind its back."""
    import torch

    import sharpness.eos.sweep
    from sharpness.eos.setting import resolve_setting
    from sharpness.eos.sweep import build_initial, initial_loss, run_setting

    setting = resolve_setting(dict(TINY_SETTING))
    model, data, criterion = build_initial(setting, "data")
    start = initial_loss(model, data, criterion)

    def fake_train(cfg, run_dir, hooks=None, threads=None):
        run_dir.mkdir(parents=True, exist_ok=True)
        torch.save({"state_dict": model.state_dict()}, run_dir / "model.pt")
        return {"status": "diverged", "reason": "diverged", "steps": 30, "diverged_step": 30,
                "diverged_why": "above_initial_loss",
                "final_train_loss": start * 3, "final_train_acc": 0.1,
                "final_test_loss": start * 3, "final_test_acc": 0.1}

    monkeypatch.setattr(sharpness.eos.sweep, "train", fake_train)  # the name sweep calls
    eos = run_setting(dict(TINY_SETTING), tmp_path / "eos", threads=1)
    bridge = run_sweep(SamEosParams.from_dict({"setting": dict(TINY_SETTING),
                                               "optimizers": [{"name": "gd"}]}),
                       tmp_path / "bridge", threads=1)
    for rows in (eos["rows"], bridge["rows"]):
        assert [(r["status"], r["diverged_step"], r["diverged_why"]) for r in rows] == [
            ("diverged", 30, "above_initial_loss")] * 2
        assert not any(r["converged"] for r in rows)


def test_a_cut_sweep_resumes_and_a_removed_one_starts_over(tmp_path):
    """The job declares sweep.json alone: a sweep cut before it wrote it keeps its flow and
    run folders and reuses them; a finished sweep.json removed (sealed but gone: a forced
    rerun) deletes them first and starts over. The numbers are the same either way."""
    from sharpness.runs.seal import unseal

    params = SamEosParams.from_dict({"setting": dict(TINY_SETTING),
                                     "optimizers": [{"name": "gd"}]})
    out = tmp_path / "bridge"
    first = run_sweep(params, out, threads=1)
    marker = out / "gd" / "kept-marker"
    marker.write_text("written before the cut")
    unseal(out, "sweep.json")  # as a sweep cut before it wrote (and sealed) its result
    (out / "sweep.json").unlink()
    resumed = run_sweep(params, out, threads=1)
    assert marker.exists()
    (out / "sweep.json").unlink()  # sealed: what -R/--forcerun removes before the rerun
    forced = run_sweep(params, out, threads=1)
    assert not marker.exists() and not (out / "gd" / "kept-marker").exists()
    for again in (resumed, forced):
        assert _classes(again["rows"]) == _classes(first["rows"])
