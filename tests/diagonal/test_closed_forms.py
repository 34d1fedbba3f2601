"""Closed forms (derived in the catalog) against discrete SAM and the solve_ivp flows."""

import numpy as np
import pytest

from sharpness.diagonal import (
    init_batch,
    init_theta,
    integrate_flow,
    l1_original,
    l1_rescaled,
    linf_blowup_times,
    linf_limit,
    linf_predictor,
    linf_zero_times,
    simulate,
    single_example,
)
from sharpness.minorfirst.linf_depth import _simulated_limit

MU = np.array([1.0, 2.0])


def _rel_err(sim: np.ndarray, cf: np.ndarray) -> float:
    """Max over time of ||sim - cf||_inf / max(||cf||_inf, tiny)."""
    scale = np.maximum(np.abs(cf).max(-1), 1e-12)
    return float(np.max(np.abs(sim - cf).max(-1) / scale))


# one case per regime in the fast tier (L = 2, and L = 3 with a blow-up); the others, about a
# second each, with the end-to-end tests
@pytest.mark.parametrize(("L", "alpha", "s_max"), [
    (2, [0.3, 0.8], 2.0),   # coordinate 1 slides to 0, coordinate 2 grows
    pytest.param(2, [0.9, 0.6], 2.0, marks=pytest.mark.e2e),
    pytest.param(3, [0.9, 0.7], 2.0, marks=pytest.mark.e2e),  # both blow up at s*=2.5
    (3, [0.3, 0.8], 2.0),   # coordinate 1 -> rho, coordinate 2 blows up at 1/0.6
    pytest.param(4, [0.2, 0.9], 2.5, marks=pytest.mark.e2e),
])
def test_linf_closed_form_vs_small_step_discrete_sam(L, alpha, s_max):
    rho = 0.5
    alpha = np.array(alpha)
    s_blow = np.min(linf_blowup_times(alpha, MU, rho, L)) if L >= 3 else np.inf
    s_end = min(s_max, 0.8 * s_blow)
    h = 2e-4
    tr = simulate(single_example(MU), init_theta(alpha, L, 2), "linf", rho=rho, eta=h,
                  steps=int(s_end / h), clock="rescaled", record_every=50)
    cf = linf_predictor(alpha, MU, rho, L, tr.s[0])
    assert _rel_err(tr.beta[0], cf) < 1e-2


def test_linf_closed_form_vs_plain_sam_with_its_rescaled_clock():
    """Plain constant-step l_inf-SAM; its rescaled time s is accumulated along the run."""
    rho, alpha = 0.5, np.array([0.3, 0.8])
    tr = simulate(single_example(MU), init_theta(alpha, 2, 2), "linf", rho=rho, eta=1e-3,
                  steps=3000, clock="original", record_every=30)
    assert tr.s[0, -1] > 0.5  # the clock moved enough to see both coordinates evolve
    cf = linf_predictor(alpha, MU, rho, 2, tr.s[0])
    assert _rel_err(tr.beta[0], cf) < 1e-2


@pytest.mark.parametrize("L", [2, 3, 4])
def test_linf_flow_events_match_closed_form(L):
    rho, alpha = 0.5, np.array([0.3, 0.9])
    fr = integrate_flow(single_example(MU), init_theta(alpha, L, 2), "linf", rho=rho, t_max=3.0)
    cf = linf_predictor(alpha, MU, rho, L, fr.time)
    keep = fr.time < 0.95 * fr.t_end if fr.status == "blowup" else slice(None)
    assert _rel_err(fr.beta[keep], cf[keep]) < 1e-6
    if L >= 3:
        assert fr.status == "blowup"
        assert fr.t_end == pytest.approx(linf_blowup_times(alpha, MU, rho, L)[1], rel=1e-3)
    if L % 2 == 0 and linf_zero_times(alpha, MU, rho, L)[0] < fr.t_end:  # coordinate 1 slides
        assert fr.zero_hits and fr.zero_hits[0][2] == 0
        assert fr.zero_hits[0][0] == pytest.approx(linf_zero_times(alpha, MU, rho, L)[0], rel=1e-6)


@pytest.mark.parametrize("method", ["gd", "l2", "linf"])
def test_l1_original_clock_closed_form_vs_discrete_and_flow(method):
    rho, alpha = 0.3, np.array([0.4, -0.2])
    data = single_example(MU)
    tr = simulate(data, init_theta(alpha, 1, 2), method, rho=rho, eta=1e-3, steps=5000,
                  record_every=100)
    cf = l1_original(alpha, MU, tr.t[0], method, rho)
    assert np.max(np.abs(tr.beta[0] - cf)) < 2e-3
    fr = integrate_flow(data, init_theta(alpha, 1, 2), method, rho=rho, clock="original",
                        t_max=5.0, t_eval=np.linspace(0, 5, 11))
    np.testing.assert_allclose(fr.beta, l1_original(alpha, MU, fr.time, method, rho), atol=1e-7)
    frs = integrate_flow(data, init_theta(alpha, 1, 2), method, rho=rho, t_max=5.0,
                         t_eval=np.linspace(0, 5, 11))
    np.testing.assert_allclose(frs.beta, l1_rescaled(alpha, MU, frs.time), atol=1e-8)


@pytest.mark.parametrize("L", [2, pytest.param(3, marks=pytest.mark.e2e)])  # L = 3: e2e tier
def test_jstar_rule_on_every_grid_point(L):
    rho = 0.5
    grid = np.linspace(0.05, 1.0, 9)
    a1, a2 = np.meshgrid(grid, grid, indexing="ij")
    alphas = np.stack([a1.ravel(), a2.ravel()], -1)
    h, s_max = 5e-3, 40.0
    tr = simulate(single_example(MU), init_batch(alphas, L, 2), "linf", rho=rho, eta=h,
                  steps=int(s_max / h), clock="rescaled", record_every=int(s_max / h))
    for k, alpha in enumerate(alphas):
        kind, j = linf_limit(alpha, MU, rho, L)
        predicted = f"e{j}" if kind == "e" else kind
        got = _simulated_limit(tr.beta[k, -1], tr.beta[k, 0], rho, L)
        assert got == predicted, (alpha, got, predicted)
