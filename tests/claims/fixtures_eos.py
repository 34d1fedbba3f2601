"""Small CSV-shaped fixtures for the predicates of paper `eos`: one where the claim holds and
one where it fails (or cannot be decided), built as the figures' tidy rows are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sharpness.claims.model import ItemData
from tests.claims.fixtures_common import Rows, draw, item


def toy(bad: bool) -> dict[str, ItemData]:
    s_gf = 7.14 if not bad else 6.5
    rows = []
    for eta, l1, es, st in ((0.05, 0.61, 0.36, "ok"), (0.36, 0.9, 2.0, "ok"),
                            (0.45, 1.0 if not bad else 0.8, 2.01, "ok"), (0.5, 1.14 if not bad else 0.7, 2.0, "ok"),
                            (0.6, None, None, "diverged")):
        dense = None if st == "diverged" else 0.5 - (0.2 if not bad and 0.3 < eta < 0.5
                                                     else 0.0)
        rows.append({"panel": "sweep", "eta": eta, "status": st, "l1": l1, "eta_s": es,
                     "s_gf": s_gf, "eta_c": 2 / s_gf, "risk_dense": dense,
                     "risk_sparse_max": None if dense is None else 0.2 + eta,
                     "risk_sparse_min": None if dense is None else 0.9 - eta})
    for which, risks in (("norm", (0.5, 0.1, 1.0)), ("sharpness", (0.6, 1.0, 0.1))):
        rows.append({"panel": "minimizer", "which": which, "risk_dense": risks[0],
                     "risk_sparse_max": risks[1], "risk_sparse_min": risks[2]})
    return {"eos/fig_diagonal": item("eos/fig_diagonal", rows)}


#: the settings of the eos sweep fixtures: seven, so that 7/7 clears a count rule's share of
#: 0.5 with its exact (Clopper–Pearson) interval (5/5 does not)
SETTINGS = ("A", "B", "C", "D", "E", "F", "G")


def sweep_rows(bad: bool, extra: Callable[[float, float], dict[str, Any]] | None = None
               ) -> Rows:
    rows = []
    for setting in SETTINGS:
        eta_c = 0.1
        for f in (0.3, 0.6, 1.5, 2.0, 3.0):
            eta = f * eta_c
            eos = f > 1
            band = 1.0 + (0.3 if bad and eos else 0.02)
            sharp = 2 / eta * band if eos else (20.0 * (1.5 if bad and f == 0.6 else 1.0))
            l2 = 5.0 + (f if eos else 0.0) * (-1 if bad else 1)
            rows.append({"setting": setting, "eta": eta, "eta_c": eta_c, "status": "ok",
                         "reason": "loss_goal", "sharpness": sharp, "l2": l2,
                         "eta_s_over_2": eta * sharp / 2, **(extra(f, eta) if extra else {})})
    return rows


def phase(bad: bool) -> dict[str, ItemData]:
    out = {"eos/fig_phase": item("eos/fig_phase", sweep_rows(bad))}
    out.update(traj_rows(bad))
    return out


def traj_rows(bad: bool, settings: Sequence[str] = SETTINGS,
              drop: float = 0.0) -> dict[str, ItemData]:
    """GD trajectories above η_c = 0.1: ηS/2 rises to 1 (``bad``: 1.3) and stays; the norm
    rises with a relative dip ``drop`` after entering EoS."""
    rows = []
    for setting in settings:
        for eta in (0.03, 0.15, 0.2, 0.3):
            above = eta > 0.1
            level = 1.3 if bad and above else 1.0
            for step in range(0, 50, 5):
                es2 = min(level, 0.2 + 0.1 * step) if above else 0.3
                rows.append({"source": "gd", "setting": setting, "eta": eta, "step": step,
                             "sharpness": 2 * es2 / eta, "l2": 5 + 0.01 * step,
                             "monotone_after_eos": (drop <= 1e-3) if above else None,
                             "max_drop_after_eos": drop if above else None})
    return {"eos/fig_trajectories": item("eos/fig_trajectories", rows)}


def test_vs_lr(bad: bool) -> dict[str, ItemData]:
    def err(f: float, eta: float) -> dict[str, Any]:
        u = 0.1 + 0.2 * abs(f - 1.5) if not bad else 0.10 + 0.1 * f  # bad: rises with η
        return {"test_error": u, "n_test": 500}
    return {"eos/fig_test_vs_lr": item("eos/fig_test_vs_lr", sweep_rows(False, err))}


def trajectories(bad: bool, drop: float | None = None) -> dict[str, ItemData]:
    out = traj_rows(False, drop=drop if drop is not None else
                    (0.05 if bad else 0.0))
    out["eos/fig_phase"] = item("eos/fig_phase", sweep_rows(False))
    return out


def measures(bad: bool) -> dict[str, ItemData]:
    """Every measure lower and every norm higher above η_c than below (``bad``: the measures
    fall with η above η_c, but stay above their values below η_c)."""
    def m(f: float, eta: float) -> dict[str, Any]:
        if f < 1:
            v, norm = 10.0, 5.0
        else:
            v, norm = (30.0 / f if bad else 5.0 / f), 6.0 + f
        out = {k: v for k in ("hessian_trace", "worst_case", "adaptive", "average")}
        out.update(l1=norm, nuclear=norm)
        return out
    return {"eos/fig_measures": item("eos/fig_measures", sweep_rows(False, m))}


def ablation_rows(factor: str, value: Any, eta_c: float, hit: bool = True,
                  below_reason: str = "loss_goal", l2_shift: float = 0.0,
                  runs: str | None = None, proven: bool = True) -> Rows:
    """Two runs of one ablation value, one each side of η_c, each row naming its run's record
    (``run_id``: a distinct record per value and η, or those of the value ``runs`` names: the
    same runs under another label; ``proven=False``: no record named)."""
    rows = []
    for k, f in enumerate((0.5, 2.0)):
        rows.append({"factor": factor, "value": value, "eta_c": eta_c, "eta": f * eta_c,
                     "status": "ok", "reason": below_reason if f < 1 else "loss_goal",
                     "l2": 5 + l2_shift + (f if hit else -f), "sharpness": 20 / f,
                     "run_id": draw(k, f"run/{runs or f'{factor}={value}'}") if proven
                     else None})
    return rows


def init_draws(bad: bool, draws: int = 3) -> dict[str, ItemData]:
    """The init-scale ablation over ``draws`` init draws (a ``seed`` column): η_c halves from
    α = 0.2 to 0.4 in each draw (about; the draws differ), or (``bad``) stays within 1 %."""
    rows = []
    for seed in range(draws):
        moved = 1.0 + 0.005 * (seed - 1) if bad else 0.5 + 0.03 * seed
        for value, eta_c in ((0.2, 0.1), (0.4, 0.1 * moved)):
            rows += [{**r, "seed": seed, "run_id": draw(seed, str(r["run_id"]))}
                     for r in ablation_rows("init_scale", value, eta_c)]
    return {"eos/fig_ablations": item("eos/fig_ablations", rows)}


def ablations(bad: bool) -> dict[str, ItemData]:
    rows = []
    for value, eta_c in ((0.2, 0.1), (0.4, 0.1 if bad else 0.05), (0.25, 0.1), (0.3, 0.1)):
        for k, f in enumerate((0.5, 2.0)):
            rows.append({"factor": "init_scale", "value": value, "eta_c": eta_c,
                         "eta": f * eta_c, "status": "ok", "reason": "loss_goal",
                         "l2": 5 + 3 * value + (f if not bad else -f), "sharpness": 20 / f,
                         "run_id": draw(k, f"run/init_scale={value}")})
    for k, (factor, value) in enumerate((("width", 16), ("width", 64), ("depth", 1),
                                         ("activation", "relu"), ("data_size", 64),
                                         ("loss", "ce"), ("loss_goal", 0.05),
                                         ("loss_goal", 0.01), ("loss_goal", 0.001),
                                         ("parametrization", "SP"))):
        rows += ablation_rows(factor, value, 0.1, hit=not bad, l2_shift=0.1 * k)
    return {"eos/fig_ablations": item("eos/fig_ablations", rows)}
