"""A tiny full pipeline of one setting: flow, GD sweep, the catalog's `eos` checks, figures.

Tiny FCN (tanh, hidden 16, init scale 0.3) on the first 64 MNIST training images, MSE, loss
goal 0.02: a few seconds of CPU. The grid spans 0.5 to 20 eta_c; 20 eta_c diverges.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sharpness.eos.setting import resolve_setting
from sharpness.eos.sweep import build_initial, run_flow

#: runs eos sweeps and draws their figures: second tier
pytestmark = pytest.mark.e2e

TINY = {
    "label": "tiny", "dataset": "mnist_embedded", "train_size": 64, "test_size": 200,
    "model": "fcn", "model_kwargs": {"hidden": 16, "activation": "tanh", "alpha": 0.3},
    "loss": "mse", "loss_goal": 0.02, "max_steps": 3000, "sharpness_every": 20,
    "log_every": 5, "checkpoint_every": 0, "device": "cpu",
    "lr_factors": [0.5, 0.8, 2.0, 3.0, 20.0],
    "measures": {"trace_samples": 4, "ascent_steps": 2, "avg_samples": 2},
}


@pytest.fixture
def sweep(tiny_sweep: dict) -> dict:
    """The sweep of ``TINY`` (run once per session by tests/eos/conftest.py)."""
    return tiny_sweep


def test_flow_reference(sweep: dict) -> None:
    flow = sweep["flow"]
    assert flow["status"] == "ok"
    assert flow["eta_c"] == pytest.approx(2 / flow["s_gf"])
    assert flow["records"] >= 10  # the path is sampled, not just its ends


def _eos_rows(sweep: dict) -> list[dict]:
    return [r for r in sweep["rows"] if r["converged"] and r["lr"] > 1.2 * sweep["eta_c"]]


def test_edge_of_stability_pins_sharpness_near_two_over_eta(sweep: dict) -> None:
    """Converged runs with eta > 1.2 eta_c end with S near 2/eta (within 20 %), far below
    s_GF: the sharpness follows the stability bound, not the flow."""
    eos = _eos_rows(sweep)
    assert len(eos) >= 2
    for r in eos:
        assert abs(r["eta_s_over_2"] - 1) < 0.2, (r["lr_over_eta_c"], r["eta_s_over_2"])
        assert r["sharpness"] < 0.6 * sweep["s_gf"]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "finding: the catalog's |eta S/2 - 1| < 0.1 is missed narrowly on this tiny setting "
    "(measured 1.03-1.11: S at the stopping iterate sits above 2/eta while the run is still "
    "in its short EoS phase); the measured values are in fig_phase's caption"))
def test_edge_of_stability_catalog_threshold(sweep: dict) -> None:
    """Catalog: |eta S / 2 - 1| < 0.1 for converged runs with eta > 1.2 eta_c."""
    for r in _eos_rows(sweep):
        assert abs(r["eta_s_over_2"] - 1) < 0.1, (r["lr_over_eta_c"], r["eta_s_over_2"])


def test_sharpness_flat_below_eta_c(sweep: dict) -> None:
    """Below eta_c the final sharpness is the same for every eta (within 10 %) and close to
    the flow's (GD follows the flow)."""
    below = [r for r in sweep["rows"] if r["converged"] and r["lr"] < sweep["eta_c"]]
    assert len(below) >= 2
    values = [r["sharpness"] for r in below]
    assert (max(values) - min(values)) / max(values) < 0.1
    final_gf = sweep["flow"]["final_sharpness"]
    assert all(abs(v - final_gf) / final_gf < 0.1 for v in values)


def test_diverged_runs_are_recorded(sweep: dict) -> None:
    top = max(sweep["rows"], key=lambda r: r["lr"])
    assert top["status"] == "diverged" and top["diverged"] and not top["converged"]
    assert top["diverged_step"] is not None
    assert "sharpness" not in top  # no measurement pretends the run converged


def test_figures_show_diverged_runs(sweep: dict, tmp_path: Path) -> None:
    from sharpness.eos.figures import fig_phase, fig_trajectories

    path = Path(sweep["out"]) / "sweep.json"
    fig_phase([path], tmp_path / "fig_phase.pdf")
    fig_trajectories([path], tmp_path / "fig_trajectories.pdf")
    for name in ("fig_phase.pdf", "fig_phase.png", "fig_trajectories.pdf"):
        assert (tmp_path / name).stat().st_size > 1000
    with open(tmp_path / "fig_phase.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert sum(r["status"] == "diverged" for r in rows) == 1
    assert len(rows) == len(TINY["lr_factors"])


def test_same_init_for_flow_and_every_run(sweep: dict) -> None:
    """The flow and the engine build the same initial parameters from the seed."""
    import torch

    setting = resolve_setting(TINY)
    a, _, _ = build_initial(setting, "data")
    b, _, _ = build_initial(setting, "data")
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


@pytest.mark.slow
def test_larger_init_moves_eta_c_network(sweep: dict, tmp_path: Path) -> None:
    """Network version of the toy's check (test_toy.py); slow: one more flow."""
    larger = resolve_setting({**TINY, "model_kwargs": {**TINY["model_kwargs"], "alpha": 0.6}})
    flow = run_flow(larger, tmp_path / "flow", "data")
    assert abs(flow["eta_c"] - sweep["eta_c"]) / sweep["eta_c"] > 0.1


def test_blow_up_rows_agree_with_each_runs_own_records(sweep: dict) -> None:
    """Every sweep row carries its run's own status: ``final.json``, ``provenance.json`` and
    the row agree, and a diverged run has its step everywhere (20 eta_c diverges)."""
    from sharpness.io import read_json

    diverged = 0
    for row in sweep["rows"]:
        final = read_json(Path(row["run"]) / "final.json")
        prov = read_json(Path(row["run"]) / "provenance.json")
        assert row["status"] == final["status"] == prov["status"]
        assert row["diverged_step"] == final.get("diverged_step") == prov.get("diverged_step")
        if row["status"] == "diverged":
            diverged += 1
            assert isinstance(row["diverged_step"], int) and row["diverged_why"]
    assert diverged >= 1 and sweep["rows"][-1]["diverged"]


def test_phase_caption_counts_evidence_and_names_dropped_settings(sweep: dict,
                                                                  tmp_path: Path) -> None:
    """The caption counts converged runs above 1.2 eta_c and below eta_c (from the rows) and
    names each setting the profile leaves out with its reason (config eos.dropped)."""
    from sharpness.cli import main

    path = Path(sweep["out"]) / "sweep.json"
    rows = sweep["rows"]
    above = sum(r["converged"] and r["lr_over_eta_c"] > 1.2 and "eta_s_over_2" in r
                for r in rows)
    below = sum(r["converged"] and r["lr_over_eta_c"] < 1.0 for r in rows)
    out = tmp_path / "fig_phase.pdf"
    assert main(["eos", "figure", "--id", "fig_phase", "--inputs", str(path), "--out", str(out),
                 "--dropped", '{"vit": "eta_c too small for the step budget"}']) == 0
    caption = (tmp_path / "fig_phase.caption.txt").read_text()
    assert f"{above} converged runs above 1.2 eta_c" in caption
    assert f", {below} below eta_c" in caption
    assert below == 2  # 0.5 and 0.8 eta_c both reach the goal on this tiny setting
    assert "Left out of this profile: vit (eta_c too small for the step budget)." in caption
    assert main(["eos", "figure", "--id", "fig_phase", "--inputs", str(path), "--out", str(out),
                 "--dropped", "[1]"]) == 2  # not an object: a clear error, not a figure
