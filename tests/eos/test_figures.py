"""The network figures of the eos paper, drawn from one tiny sweep (tests/eos/test_sweep.py's
setting) and from sweeps derived from it: each renders, and its CSV holds the numbers its
caption and the claims ledger quote, computed as the docstrings define them."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest

from sharpness.eos.figures import (
    fig_ablations,
    fig_measures,
    fig_phase,
    fig_test_vs_lr,
    fig_trajectories,
)
from sharpness.eos.figures.ablations import omitted_factors, varied_keys
from sharpness.eos.figures.trajectories import MONOTONE_TOL, drop_after_eos
from sharpness.evidence.stats import separated_minimum, wilson_interval
from sharpness.runs.seal import seal
from tests.eos.test_sweep import TINY

#: draws every figure of its paper from its computation once (a module fixture): second tier
pytestmark = pytest.mark.e2e


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def _num(value: str) -> float | None:
    return None if value in ("", "None") else float(value)


def test_phase_draws_relative_norms_against_the_flow(sweep_path: Path, tmp_path: Path) -> None:
    fig_phase([sweep_path], tmp_path / "fig_phase.pdf")
    sweep = json.loads(sweep_path.read_text())
    gf = sweep["flow"]["final_norms"]
    rows = _rows(tmp_path / "fig_phase.csv")
    assert len(rows) == len(TINY["lr_factors"])
    assert {r["loss"] for r in rows} == {sweep["setting"]["loss"]}  # the ledger reads it
    # each row names its run's signed record and draw: one record per run; the runs of one
    # setting share its init and data order (the η of a setting are not replicates)
    assert len({r["run_id"] for r in rows}) == len(rows) and all(r["run_id"] for r in rows)
    assert len({r["init_sha256"] for r in rows}) == 1 and all(r["order_sha256"] for r in rows)
    for row, run in zip(rows, sweep["rows"], strict=True):
        if run.get("l2") is None:
            assert _num(row["rel_l2"]) is None
        else:
            assert _num(row["rel_l2"]) == pytest.approx(run["l2"] / gf["l2"] - 1)
        if run.get("sharpness") is None:  # a diverged run has no final sharpness
            assert run["diverged"] and _num(row["s_over_gf"]) is None
            continue
        assert _num(row["rel_nuclear"]) == pytest.approx(run["nuclear"] / gf["nuclear"] - 1)
        assert _num(row["s_over_gf"]) == pytest.approx(run["sharpness"]
                                                        / sweep["flow"]["final_sharpness"])
    # GD well below eta_c follows the flow: its final l2 norm is within 5 % of the flow's
    low = [r for r in rows if float(r["eta_over_eta_c"]) < 0.6 and r["status"] == "ok"]
    assert low and all(abs(_num(r["rel_l2"])) < 0.05 for r in low)


def test_test_vs_lr_has_wilson_intervals_and_stars_only_separated_minima(
        sweep_path: Path, tmp_path: Path) -> None:
    fig_test_vs_lr([sweep_path], tmp_path / "fig_test_vs_lr.pdf")
    rows = [r for r in _rows(tmp_path / "fig_test_vs_lr.csv") if r["status"] != "diverged"]
    n = int(rows[0]["n_test"])
    assert n == TINY["test_size"]
    for r in rows:
        lo, hi = wilson_interval(float(r["test_error"]) * n, n)
        assert float(r["test_error_low"]) == pytest.approx(lo)
        assert float(r["test_error_high"]) == pytest.approx(hi)
        assert lo <= float(r["test_error"]) <= hi
    errs = [float(r["test_error"]) for r in sorted(rows, key=lambda r: float(r["eta"]))]
    starred = [r for r in rows if r["best_separated"] == "True"]
    assert len(starred) == (0 if separated_minimum(errs, n) is None else 1)
    caption = (tmp_path / "fig_test_vs_lr.caption.txt").read_text()
    assert "Wilson 95 %" in caption and "tiny:" in caption


def test_separated_minimum() -> None:
    assert separated_minimum([0.5, 0.1, 0.5], 1000) == 1
    assert separated_minimum([0.5, 0.45, 0.5], 100) is None  # inside the noise
    assert separated_minimum([0.1, 0.3, 0.5], 1000) is None  # best at an end: no U
    assert separated_minimum([0.1, 0.5], 1000) is None


def test_measures_renders_every_measure(sweep_path: Path, tmp_path: Path) -> None:
    fig_measures([sweep_path], tmp_path / "fig_measures.pdf")
    rows = _rows(tmp_path / "fig_measures.csv")
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok and all(_num(r["hessian_trace"]) is not None and _num(r["worst_case"]) is not None
                      for r in ok)
    assert (tmp_path / "fig_measures.png").stat().st_size > 1000


def test_trajectory_drop_tolerance() -> None:
    lr = 0.1  # 2 / lr = 20
    rise = [{"step": t, "sharpness": 21.0 if t >= 2 else 5.0, "l2": 1 + 0.01 * t}
            for t in range(10)]
    assert drop_after_eos(rise, lr) == 0.0
    wiggle = copy.deepcopy(rise)
    wiggle[5]["l2"] = wiggle[4]["l2"] * (1 - MONOTONE_TOL / 2)
    assert 0 < drop_after_eos(wiggle, lr) <= MONOTONE_TOL
    fall = copy.deepcopy(rise)
    fall[6]["l2"] = 0.9
    assert drop_after_eos(fall, lr) > MONOTONE_TOL
    calm = [{**r, "sharpness": 5.0} for r in rise]
    assert drop_after_eos(calm, lr) is None  # never reached 2/eta


def test_trajectories_record_the_drop(sweep_path: Path, tmp_path: Path) -> None:
    fig_trajectories([sweep_path], tmp_path / "fig_trajectories.pdf")
    rows = [r for r in _rows(tmp_path / "fig_trajectories.csv") if r["source"] == "gd"]
    for r in rows:
        drop = _num(r["max_drop_after_eos"])
        if drop is None:
            assert r["monotone_after_eos"] in ("", "None")
        else:
            assert r["monotone_after_eos"] == str(drop <= MONOTONE_TOL)
    assert "1e-03" in (tmp_path / "fig_trajectories.caption.txt").read_text() or \
        "0.001" in (tmp_path / "fig_trajectories.caption.txt").read_text()


def _variant(path: Path, out: Path, factor: str, label: str, value: object,
             alpha: float) -> Path:
    sweep = json.loads(path.read_text())
    sweep["setting"]["model_kwargs"]["alpha"] = alpha
    sweep["setting"]["ablation"] = {"factor": factor, "label": label, "value": str(value)}
    sweep["setting"]["label"] = f"{label} = {value}"
    sweep["eta_c"] *= 1 + alpha  # distinct values to plot; the figure reads, never recomputes
    out.mkdir(parents=True)
    (out / "sweep.json").write_text(json.dumps(sweep))
    seal(out, "sweep.json")  # as the sweep job does: the figure checks it against this hash
    return out / "sweep.json"


def test_ablations_name_every_factor_and_the_omitted_ones(sweep_path: Path,
                                                         tmp_path: Path) -> None:
    paths = [_variant(sweep_path, tmp_path / f"a{a}", "init_scale", "init scale alpha", a, a)
             for a in (0.2, 0.4)]
    fig_ablations(paths, tmp_path / "fig_ablations.pdf")
    rows = _rows(tmp_path / "fig_ablations.csv")
    assert {r["value"] for r in rows} == {"0.2", "0.4"}
    # each row names its run's record (what the ledger tells ablation values apart by): both
    # variants here are copies of one sweep, so they name the same records
    runs = [r["run_id"] for r in json.loads(sweep_path.read_text())["rows"]]
    assert all(runs) and [r["run_id"] for r in rows] == runs * 2
    assert all(r["init_sha256"] and r["order_sha256"] for r in rows)
    caption = (tmp_path / "fig_ablations.caption.txt").read_text()
    assert "init scale alpha: eta_c" in caption
    for left_out in ("width", "depth", "data-set size", "loss goal epsilon"):
        assert left_out in caption.split("not varied in this profile:")[1]
    assert "init scale" not in caption.split("not varied in this profile:")[1]


def test_varied_keys_and_omitted_factors() -> None:
    a = {"model_kwargs": {"alpha": 0.2, "hidden": 32}, "train_size": 128, "label": "x"}
    b = {"model_kwargs": {"alpha": 0.4, "hidden": 32}, "train_size": 128, "label": "y"}
    c = {"model_kwargs": {"alpha": 0.2, "hidden": 32}, "train_size": 256}
    assert varied_keys([a, b]) == ["model_kwargs.alpha"]
    assert omitted_factors([[a, b], [a, c]]) == ["width", "depth", "activation (ReLU/tanh)",
                                                 "loss goal epsilon",
                                                 "muP vs standard parametrization"]
