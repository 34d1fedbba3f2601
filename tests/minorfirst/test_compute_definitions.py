"""The minorfirst computations checked against their definitions in the catalog
(``../shared/CATALOG.md``, paper ``minorfirst``), each recomputed here independently and small.

* ``l1_maxmargin``: at L=1 the max-margin direction of one example is mu/||mu||, the path of
  every method is beta(s) = alpha 1 + s mu in the rescaled clock, and every final cosine
  exceeds 0.999.
* ``linf_depth``: the L=2 closed form w_j(s) = rho + (alpha_j - rho) e^{mu_j s} (beta = w^2), and
  the limit read off each simulated grid point equals the j* rule.
* ``l2_sequential``: the dominant coordinate of l2-SAM never moves down and visits >= 3
  coordinates for d = 5; under GD it is d throughout.
* ``flow_vs_discrete``: the error is max_t ||beta_eta(t) - beta_flow(t)||_inf, recomputed with a
  hand-written L=1 GD loop against scipy's flow, and the slope is about 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import expit

from sharpness.minorfirst.compute import (
    compute_flow_vs_discrete,
    compute_l1_maxmargin,
    compute_l2_sequential,
)
from sharpness.minorfirst.linf_depth import compute_linf_depth


def test_l1_maxmargin_follows_the_closed_form_and_reaches_the_max_margin():
    mu = np.array([1.0, 2.0])
    p = {"mu": mu.tolist(), "multi": {"n": 10, "scales": [0.5, 1.0, 2.0], "noise": 0.5,
                                      "seed": 4},
         "alphas": [0.1, 1.0], "rhos": [0.1, 0.5], "h": 0.05, "steps": 2000,
         "record_every": 100}
    a, s = compute_l1_maxmargin(p)
    np.testing.assert_allclose(a["single_target"], mu / np.linalg.norm(mu), atol=1e-6)
    combos = [(al, r) for al in p["alphas"] for r in p["rhos"]]
    for k, (alpha, _) in enumerate(combos):
        for m in ("gd", "l2", "linf"):
            S, cos = a[f"single_{m}_s"][k], a[f"single_{m}_cos"][k]
            beta = alpha + S[:, None] * mu[None, :]  # the closed form, at the recorded times
            want = beta @ mu / (np.linalg.norm(beta, axis=1) * np.linalg.norm(mu))
            np.testing.assert_allclose(cos, want, atol=1e-6, err_msg=f"{m} alpha={alpha}")
    finals = [c["final_cosine"] for c in s["curves"]]
    assert len(finals) == 2 * 3 * len(combos)
    assert s["min_final_cosine"] == min(finals) > 0.999


def _jstar_limit(alpha: np.ndarray, mu: np.ndarray, rho: float, L: int) -> str:
    """The catalog's limit of l_inf-SAM from a balanced init alpha (the labels of the summary)."""
    above = alpha > rho
    if not above.any():
        return "0" if L % 2 == 0 else "rho^L 1"
    score = np.where(above, mu * (alpha - rho) ** (L - 2), -np.inf)
    return f"e{int(np.argmax(score)) + 1}"


def test_linf_depth_closed_form_and_the_jstar_rule():
    mu = np.array([1.0, 2.0])
    rho = 0.5
    p = {"mu": mu.tolist(), "rho": rho, "depths": [2, 3], "alphas": [[0.9, 0.6], [0.7, 0.8]],
         "s_max": 1.0, "blowup_fraction": 0.8, "h_traj": 0.001, "markers": 10,
         "grid_min": 0.05, "grid_max": 1.0, "grid_n": 5, "h_phase": 0.01, "s_phase": 20.0}
    a, s = compute_linf_depth(p)
    for idx, alpha in enumerate(p["alphas"]):  # L = 2, every alpha_j > rho: no sliding
        S = a[f"L2_{idx}_s_line"]
        w = rho + (np.asarray(alpha) - rho)[None, :] * np.exp(mu[None, :] * S[:, None])
        np.testing.assert_allclose(a[f"L2_{idx}_beta_cf"], w ** 2, rtol=1e-9)
    assert s["max_rel_err_discrete"] < 1e-2
    for L in p["depths"]:
        grid = a[f"L{L}_grid"]
        sim = a[f"L{L}_phase_sim"]
        for i, g1 in enumerate(grid):
            for j, g2 in enumerate(grid):
                want = _jstar_limit(np.array([g1, g2]), mu, rho, L)
                if abs(g1 - rho) < 0.05 or abs(g2 - rho) < 0.05:
                    continue  # on the line alpha_j = rho the limit is a knife edge
                assert s["labels"][int(sim[i, j])] == want, (L, g1, g2)
        # plain GD from the same inits, read by the same reader: the j* rule at rho = 0 (at
        # L = 2 that is e2 everywhere; at L = 3 argmax_j mu_j alpha_j, e1 where alpha_1 > 2 alpha_2)
        gd = a[f"L{L}_phase_gd"]
        assert gd.shape == sim.shape
        for i, g1 in enumerate(grid):
            for j, g2 in enumerate(grid):
                assert s["labels"][int(gd[i, j])] == _jstar_limit(np.array([g1, g2]), mu, 0.0, L)
        counts = next(q for q in s["phase"] if q["L"] == L)["gd_counts"]
        assert sum(counts.values()) == gd.size
        assert set(counts) == ({"e2"} if L == 2 else {"e1", "e2"})


def test_l2_sequential_minor_first_under_l2_sam_major_throughout_under_gd():
    p = {"rho": 1.0, "h": 0.004, "markers": 10,
         "cases": [{"mu": [1.0, 2.0, 3.0, 4.0, 5.0], "alpha": 0.45, "s_max": 6.0}]}
    a, s = compute_l2_sequential(p)
    runs = {r["method"]: r for r in s["cases"]}
    seq = runs["l2"]["sequence"]
    assert len(seq) >= 3 and seq == sorted(seq) and seq[-1] == 4
    # recomputed from the stored shares: the argmax coordinate never moves down
    sh = a["c0_l2_share"]
    np.testing.assert_allclose(sh.sum(1), 1.0)
    top = np.sort(sh, 1)
    dom = sh.argmax(1)[top[:, -1] - top[:, -2] > 1e-6]
    assert np.all(np.diff(dom) >= 0) and len(set(dom.tolist())) >= 3
    gd = a["c0_gd_share"]
    assert np.all(gd[1:].argmax(1) == 4) and runs["gd"]["sequence"] == [4]
    # the isolating run: the same init and rho with the unnormalised perturbation
    # eps = rho grad L amplifies the major coordinate first, as GD does: the normalisation
    # is what makes l2-SAM minor-first
    assert runs["unnormalised"]["sequence"][0] == 4 and seq[0] < 4
    un = a["c0_unnormalised_share_sim"]
    np.testing.assert_allclose(un.sum(1), 1.0)
    assert un[-1].argmax() == 4


@pytest.mark.parametrize("eta_index", [0, 1])
def test_flow_vs_discrete_error_is_its_definition(eta_index):
    mu = np.array([1.0, 2.0])
    p = {"mu": mu.tolist(), "rho": 0.1, "alpha_l1": 0.3, "alpha_l2": 0.5, "T": 1.0,
         "etas": [0.05, 0.025, 0.0125], "n_check": 10}
    a, s = compute_flow_vs_discrete(p)
    eta, T = p["etas"][eta_index], p["T"]
    steps = round(T / eta)
    every = max(1, steps // p["n_check"])
    # L=1 GD on the single example (x = mu, y = +1), logistic loss: beta += eta mu sigma(-<mu, beta>)
    beta = np.full(2, p["alpha_l1"])
    path, times = [beta.copy()], [0.0]
    for k in range(1, steps + 1):
        beta = beta + eta * mu * expit(-mu @ beta)
        if k % every == 0:
            path.append(beta.copy())
            times.append(k * eta)
    flow = solve_ivp(lambda _t, b: mu * expit(-mu @ b), (0.0, T), np.full(2, p["alpha_l1"]),
                     t_eval=times, rtol=1e-12, atol=1e-14)
    want = float(np.max(np.abs(np.array(path) - flow.y.T)))
    assert a["L1_gd_err"][eta_index] == pytest.approx(want, rel=1e-5)
    for q in s["slopes"]:
        assert 0.9 < q["slope"] < 1.1, q
    assert np.all(np.diff(a["L1_gd_err"]) < 0)  # a smaller step, a smaller error
