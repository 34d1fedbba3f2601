"""The lesam_diagonal figure end to end on a tiny grid: arrays, regimes, caption from the data."""

import csv

import pytest

from sharpness.bridges.lesam_diagonal import BRIDGE_REGIMES, LesamDiagonalParams, compute, findings
from sharpness.bridges.lesam_diagonal_plot import plot

TINY = {
    "mu": [1.0, 2.0, 3.0], "alpha": 0.25,
    "multi": {"n": 6, "scales": [1.0, 2.0, 3.0], "noise": 0.3, "seed": 0, "alpha": 0.25},
    "alpha_grid": [0.05, 1.0, 3], "sigma_grid": [0.02, 0.5, 3], "rho_grid": [0.1, 1.0, 3],
    "n_record": 61, "u_stop": 1e3}


@pytest.mark.e2e  # computes and draws the figure
def test_tiny_lesam_diagonal_compute():
    p = LesamDiagonalParams.from_dict(TINY)
    arrays, summary = compute(p)
    assert arrays["map_lesam_free_regime"].shape == (3, 3)
    assert set(arrays["map_l2_regime"].ravel()) <= set(range(len(BRIDGE_REGIMES)))
    free = next(r for r in summary["paths"] if r["set"] == "single" and r["variant"] == "lesam_free")
    gd = next(r for r in summary["paths"] if r["set"] == "single" and r["variant"] == "gd")
    assert gd["regime"] == "major-first" and free["stop"] in ("rest", "collapse")
    f = findings(arrays, summary, p)
    assert f["verdict"] in ("keeps", "removes", "reverses")


@pytest.mark.slow
def test_tiny_lesam_diagonal_figure(tmp_path):
    """Drawing is slow on a shared 2-core machine (12 panels, PDF + PNG): run by make test-slow."""
    p = LesamDiagonalParams.from_dict(TINY)
    arrays, summary = compute(p)
    f = findings(arrays, summary, p)
    plot(arrays, summary, p, tmp_path / "fig.pdf", inputs=[])
    caption = (tmp_path / "fig.caption.txt").read_text()
    assert f"budget {f['verdict']}" in caption
    with open(tmp_path / "fig.csv") as handle:
        panels = {row["panel"] for row in csv.DictReader(handle)}
    assert panels == {"shares", "limit", "rest_margin", "map"}
    assert (tmp_path / "fig.png").exists() and (tmp_path / "fig.provenance.json").exists()
