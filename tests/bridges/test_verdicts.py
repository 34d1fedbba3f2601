"""The bridges' verdicts, each from a small hand-made fixture where it should hold and one where
it should not: ``bridges/sam_eos`` (threshold order against GD, sharpness against 2/eta) and
``bridges/lesam_diagonal`` (LE-SAM keeps, removes or reverses minor-first amplification; the
measured rest margin against the derived one)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sharpness.bridges.lesam_diagonal import (
    BRIDGE_REGIMES,
    LesamDiagonalParams,
    rest_margin_theory,
)
from sharpness.bridges.lesam_diagonal import (
    findings as diagonal_findings,
)
from sharpness.bridges.sam_eos_plot import caption_text, findings, verdicts_of

SMALLER = "becomes unstable at a smaller learning rate than GD"
LARGER = "stays stable at a larger learning rate than GD"
SAME = "has its threshold in the same grid bracket as GD"


def _row(name: str, lr: float, ok: bool, eta_s_over_2: float = 0.9) -> dict[str, Any]:
    row: dict[str, Any] = {"optimizer": name, "lr": lr, "converged": ok, "diverged": not ok,
                           "test_error": 0.1 if ok else None, "l2": 1.0}
    if ok:
        row.update(sharpness=2 * eta_s_over_2 / lr, eta_s_over_2=eta_s_over_2, edge=2 / lr)
    return row


def _sweep(gd_ok: int, sam_ok: int, sam_ratio: float = 0.9) -> dict[str, Any]:
    """GD and SAM on the grid 1..6 x eta_c (eta_c = 1): the first ``*_ok`` rates converge."""
    lrs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    rows = [_row("gd", lr, k < gd_ok) for k, lr in enumerate(lrs)]
    rows += [_row("sam", lr, k < sam_ok, sam_ratio) for k, lr in enumerate(lrs)]
    return {"eta_c": 1.0, "setting": {"test_size": 100, "dataset": "d", "train_size": 8,
                                      "model": "fcn", "width": 1, "loss": "mse", "seed": 0,
                                      "loss_goal": 0.1, "max_steps": 10},
            "optimizers": [{"name": "gd"}, {"name": "sam", "hparams": {"rho": 0.05}}],
            "rows": rows}


@pytest.mark.parametrize(("gd_ok", "sam_ok", "order"), [(4, 2, SMALLER), (2, 4, LARGER),
                                                        (3, 3, SAME)])
def test_sam_eos_threshold_order(gd_ok, sam_ok, order):
    f = findings(_sweep(gd_ok, sam_ok))
    assert verdicts_of(f)["sam"][0] == order
    assert f"sam {order}" in caption_text(_sweep(gd_ok, sam_ok), f)


def test_sam_eos_sharpness_side_of_two_over_eta():
    assert verdicts_of(findings(_sweep(4, 4, sam_ratio=0.9)))["sam"][1] == "below"
    assert verdicts_of(findings(_sweep(4, 4, sam_ratio=1.05)))["sam"][1] == "not below"
    # converged only at lr <= 1.2 eta_c: nothing to test
    assert verdicts_of(findings(_sweep(4, 1)))["sam"][1] == "untested"


def test_sam_eos_has_no_verdict_without_gd():
    sweep = _sweep(3, 3)
    sweep["optimizers"] = sweep["optimizers"][1:]
    sweep["rows"] = [r for r in sweep["rows"] if r["optimizer"] == "sam"]
    assert verdicts_of(findings(sweep)) == {}


# -- lesam_diagonal ------------------------------------------------------------------------

def _counts(**given: int) -> dict[str, int]:
    return {r: int(given.get(r.replace("-", "_"), 0)) for r in BRIDGE_REGIMES}


def _diagonal(free: dict[str, int], clip: dict[str, int], lesam_sequence: list[int],
              margins: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    sigmas = np.array([0.05, 0.1, 0.2])
    arrays = {"sigmas": sigmas, "alphas": np.array([0.1, 0.2, 0.4]),
              "single_lesam_free_limit_margin": margins}
    paths = [{"set": "single", "variant": v, "regime": "sequential", "cosine_l1": 1.0,
              "sequence": lesam_sequence if v.startswith("lesam") else [2]}
             for v in ("gd", "l2", "lesam_free", "lesam_clip")]
    summary = {"single_major": 2, "paths": paths,
               "maps": {"lesam_free": {"counts": free}, "lesam_clip": {"counts": clip},
                        "l2": {"counts": _counts(sequential=3)}},
               "limit": [{"set": "single", "variant": "lesam_free", "stop": "rest"}
                         for _ in sigmas]}
    return arrays, summary


@pytest.mark.parametrize(("free", "clip", "sequence", "verdict"), [
    (_counts(minor_last=3, sequential=1), _counts(sequential=4), [0, 2], "reverses"),
    (_counts(minor_last=1, sequential=3), _counts(sequential=4), [0, 2], "keeps"),
    # sequential paths, but every LE-SAM path starts on the major coordinate: not minor-first
    (_counts(minor_last=1, sequential=3), _counts(sequential=4), [2], "removes"),
    (_counts(major_first=4), _counts(major_first=4), [0, 2], "removes"),
])
def test_lesam_diagonal_verdict(free, clip, sequence, verdict):
    p = LesamDiagonalParams.from_dict({})
    theory = rest_margin_theory(np.array([0.05, 0.1, 0.2]))
    arrays, summary = _diagonal(free, clip, sequence, theory)
    assert diagonal_findings(arrays, summary, p)["verdict"] == verdict


def test_lesam_diagonal_rest_margin_against_theory():
    p = LesamDiagonalParams.from_dict({})
    theory = rest_margin_theory(np.array([0.05, 0.1, 0.2]))
    assert np.all(np.isfinite(theory))
    counts = _counts(sequential=4)
    f = diagonal_findings(*_diagonal(counts, counts, [2], theory), p)
    assert f["rest_count"] == 3 and f["rest_rel_err"] < 1e-12
    f = diagonal_findings(*_diagonal(counts, counts, [2], theory * 1.1), p)
    assert f["rest_rel_err"] == pytest.approx(0.1)
