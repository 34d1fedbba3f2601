"""LE-SAM on the diagonal network: flow vs discrete LE-SAM, budget identity, rest point, regimes."""

import numpy as np
import pytest

from sharpness.bridges.lesam_diagonal import classify_path
from sharpness.bridges.lesam_flow import (
    first_order_rise,
    integrate_lesam_flow,
    lesam_perturbation,
    lesam_radius,
    simulate_lesam,
    single_coordinate_rest_margin,
)
from sharpness.bridges.paths import rescaled_paths
from sharpness.diagonal import gaussian_classes, grad, init_batch, init_theta, single_example


def _rel_err(sim: np.ndarray, ref: np.ndarray) -> float:
    scale = np.maximum(np.abs(ref).max(-1), 1e-12)
    return float(np.max(np.abs(sim - ref).max(-1) / scale))


@pytest.mark.parametrize(("data", "alpha", "rho_max", "order"), [
    (single_example([1.0, 2.0]), [0.6, 0.4], np.inf, True),
    (single_example([1.0, 2.0, 3.0]), 0.5, 0.3, False),          # clip active part of the time
    (gaussian_classes(8, [1.0, 2.0, 3.0], 0.5, seed=1), 0.5, np.inf, False),
])
def test_lesam_flow_matches_small_step_discrete_lesam(data, alpha, rho_max, order):
    """Discrete LE-SAM (original clock, eta = 1e-3) against the solve_ivp flow: rel. error < 1e-2."""
    sigma, eta, T = 0.05, 1e-3, 2.0
    theta0 = init_theta(alpha, 2, data.d)
    tr = simulate_lesam(data, theta0, sigma=sigma, rho_max=rho_max, varrho=0.0, eta=eta,
                        steps=int(T / eta), clock="original", record_every=100)
    fl = integrate_lesam_flow(data, theta0, sigma=sigma, rho_max=rho_max, clock="original",
                              t_max=T, t_eval=tr.t[0], rtol=1e-10, atol=1e-12)
    assert fl.status == "ok" and not tr.diverged[0]
    assert np.abs(tr.beta[0, -1] - tr.beta[0, 0]).max() > 0.05  # it moved
    err = _rel_err(tr.beta[0], fl.beta)
    assert err < 1e-2, err
    if not order:
        return
    # and the error is first order in eta: halving the step roughly halves it
    tr2 = simulate_lesam(data, theta0, sigma=sigma, rho_max=rho_max, varrho=0.0, eta=eta / 2,
                         steps=int(T / eta * 2), clock="original", record_every=200)
    err2 = _rel_err(tr2.beta[0], fl.beta)
    assert 0.3 < err2 / err < 0.7


def test_rescaled_paths_follow_the_rescaled_flow():
    """The step-controlled Euler paths converge to the solve_ivp rescaled LE-SAM flow."""
    data = single_example([1.0, 2.0, 3.0])
    theta0 = init_theta(0.4, 2, 3)
    grid = np.linspace(0.0, 1.5, 31)
    pb = rescaled_paths(data, theta0, "lesam", sigma=0.1, s_grid=grid, rel_step=1e-3,
                        eta_max=1e-3, u_stop=1e9)
    fl = integrate_lesam_flow(data, theta0, sigma=0.1, clock="rescaled", t_max=1.5,
                              t_eval=grid, rtol=1e-10, atol=1e-12)
    ok = np.all(np.isfinite(pb.beta[0]), -1)
    assert ok.sum() == grid.size
    assert _rel_err(pb.beta[0], fl.beta) < 1e-2


def test_budget_identity_and_clip():
    """Unclipped: <g, eps> = sigma exactly; clipped: the radius is rho_max."""
    data = single_example([1.0, 2.0])
    theta = init_batch([0.3, 0.8, 1.5], 2, 2)
    eps = lesam_perturbation(theta, data, 0.07)
    np.testing.assert_allclose(first_order_rise(theta, data, eps), 0.07, rtol=1e-12)
    g = grad(theta, data, "original")
    gn = np.sqrt((g * g).sum(axis=(-2, -1)))
    rad = lesam_radius(theta, data, 0.07, rho_max=0.2)
    np.testing.assert_allclose(rad, np.minimum(0.07 / gn, 0.2), rtol=1e-12)
    assert rad.max() == 0.2 and rad.min() < 0.2  # both cases occur


def test_unclipped_lesam_rests_on_the_minor_coordinate_at_the_derived_margin():
    """Derived: rest margin u* solves 2u = sigma (1 + e^u), on the minor coordinate e_1."""
    mu = np.array([1.0, 2.0, 3.0])
    data = single_example(mu)
    sigma = 0.1
    pb = rescaled_paths(data, init_theta(0.3, 2, 3), "lesam", sigma=sigma,
                        s_grid=np.linspace(0, 40, 81), rel_step=0.01)
    assert pb.stop[0] == "rest"
    u_star = single_coordinate_rest_margin(sigma)
    assert abs(pb.min_margin_end[0] - u_star) / u_star < 1e-3
    beta = pb.beta_end[0]
    assert beta[0] > 100 * max(beta[1:].max(), 1e-300)
    assert classify_path(pb.beta[0], beta, pb.stop[0], major=2) == "minor-last"
    # GD from the same init ends major
    gd = rescaled_paths(data, init_theta(0.3, 2, 3), "gd", s_grid=np.linspace(0, 40, 81))
    assert classify_path(gd.beta[0], gd.beta_end[0], gd.stop[0], major=2) == "major-first"
    assert np.isnan(single_coordinate_rest_margin(0.6))  # above the tangency value: no rest point
