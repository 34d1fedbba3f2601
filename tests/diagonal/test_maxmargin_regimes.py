"""Max-margin solvers (checked by KKT / a brute-force search), limits, regimes and discretisation order."""

import numpy as np
import pytest
from scipy.optimize import nnls

from sharpness.diagonal import (
    classify_regime,
    cosine,
    dominant,
    dominant_sequence,
    gaussian_classes,
    init_batch,
    init_theta,
    integrate_flow,
    l1_max_margin,
    l1_original,
    l2_max_margin,
    refine_boundary,
    simulate,
    single_example,
)


def test_l2_max_margin_single_example_and_kkt():
    np.testing.assert_allclose(l2_max_margin(single_example([1.0, 2.0])), np.array([1, 2]) / np.sqrt(5), atol=1e-7)
    data = gaussian_classes(12, [0.5, 1.0, 2.0], noise=0.6, seed=1)
    b = l2_max_margin(data)
    m = data.Z @ b
    active = m <= m.min() * (1 + 1e-5)
    # KKT: beta is a nonnegative combination of the active signed examples
    lam, resid = nnls(data.Z[active].T, b)
    assert resid < 1e-6 and np.all(m > 0)


def test_l1_max_margin_beats_random_directions():
    data = gaussian_classes(10, [0.3, 0.6, 1.0, 1.5], noise=0.5, seed=2)
    b = l1_max_margin(data)
    best = np.min(data.Z @ b) / np.abs(b).sum()
    rng = np.random.default_rng(0)
    cand = rng.normal(size=(20000, 4))
    cand_margin = np.min(cand @ data.Z.T, axis=1) / np.abs(cand).sum(1)
    assert best >= cand_margin.max() - 1e-9
    np.testing.assert_allclose(l1_max_margin(single_example([1.0, 2.0, 3.0])), [0, 0, 1], atol=1e-9)


@pytest.mark.parametrize("method", ["gd", "l2", "linf"])
def test_depth_one_converges_to_l2_max_margin(method):
    data = gaussian_classes(8, [0.5, 1.0, 2.0], noise=0.5, seed=4)
    target = l2_max_margin(data)
    tr = simulate(data, init_batch([0.1, 1.0], 1, 3), method, rho=0.2, eta=0.05, steps=4000,
                  clock="rescaled", record_every=4000)
    assert np.all(cosine(tr.beta[:, -1], target) > 0.999)


def test_depth_two_l2_sam_limit_is_l1_max_margin():
    mu = np.arange(1.0, 6.0)
    tr = simulate(single_example(mu), init_batch([0.5, 1.0], 2, 5), "l2", rho=1.0, eta=5e-3,
                  steps=4000, clock="rescaled", record_every=4000)
    assert np.all(cosine(tr.beta[:, -1], l1_max_margin(single_example(mu))) > 0.99)


def test_regimes_sequence_and_gd():
    mu = np.arange(1.0, 6.0)
    alphas = np.geomspace(0.05, 3.0, 30)
    data = single_example(mu)
    tr = simulate(data, init_batch(alphas, 2, 5), "l2", rho=1.0, eta=2e-3, steps=5000,
                  clock="rescaled", record_every=25)
    info = [classify_regime(tr.beta[k], major=4) for k in range(len(alphas))]
    names = [i.regime for i in info]
    assert {"collapse", "sequential", "major-first"} <= set(names)
    # regimes are ordered in alpha: collapse < sequential < major-first
    order = {"collapse": 0, "sequential": 1, "major-first": 2}
    assert all(order[a] <= order[b] for a, b in zip(names, names[1:], strict=False))
    band = alphas[[n == "sequential" for n in names]]
    # at the middle of the sequential band: minor first, major last, moving only up, >= 3 visits
    mid = float(np.sqrt(band.min() * band.max()))
    fr = integrate_flow(data, init_theta(mid, 2, 5), "l2", rho=1.0, t_max=10.0,
                        t_eval=np.linspace(0, 10, 1001))
    mid_info = classify_regime(fr.beta, major=4)
    assert mid_info.regime == "sequential" and mid_info.monotone
    assert len(mid_info.sequence) >= 3 and mid_info.sequence[-1] == 4
    # finding: "the dominant coordinate never moves down" fails just above the collapse
    # boundary: at alpha = 0.361, rho = 1 the flow visits 1, 0, 1, 2, 3 (see l2_regimes)
    low = integrate_flow(data, init_theta(0.361, 2, 5), "l2", rho=1.0, t_max=10.0,
                         t_eval=np.linspace(0, 10, 1001))
    low_info = classify_regime(low.beta, major=4)
    assert low_info.regime == "sequential" and not low_info.monotone
    assert low_info.sequence[:3] == (1, 0, 1)
    gd = simulate(data, init_batch(alphas[::5], 2, 5), "gd", eta=2e-3, steps=2000,
                  clock="rescaled", record_every=20)
    for k in range(gd.beta.shape[0]):
        assert dominant_sequence(dominant(gd.beta[k])) == [4]


def test_refine_boundary_bisects_a_threshold():
    assert refine_boundary(lambda a: "lo" if a < 0.37 else "hi", 0.1, 1.0) == pytest.approx(0.37, rel=2e-3)


def test_discrete_to_flow_error_is_first_order():
    mu = np.array([1.0, 2.0])
    data = single_example(mu)
    alpha = np.array([0.4, -0.2])
    etas = np.array([0.04, 0.02, 0.01, 0.005])
    T = 2.0
    errs = []
    for eta in etas:
        tr = simulate(data, init_theta(alpha, 1, 2), "l2", rho=0.3, eta=eta, steps=int(round(T / eta)))
        errs.append(np.abs(tr.beta[0] - l1_original(alpha, mu, tr.t[0], "l2", 0.3)).max())
    slope = np.polyfit(np.log(etas), np.log(errs), 1)[0]
    assert 0.9 < slope < 1.1
    # L=2 against the solve_ivp flow
    th0 = init_theta([0.5, 0.4], 2, 2)
    fr = integrate_flow(data, th0, "l2", rho=0.1, clock="original", t_max=T, t_eval=np.array([T]),
                        rtol=1e-11, atol=1e-13)
    errs2 = []
    for eta in etas:
        tr = simulate(data, th0, "l2", rho=0.1, eta=eta, steps=int(round(T / eta)), record_every=int(round(T / eta)))
        errs2.append(np.abs(tr.beta[0, -1] - fr.beta[-1]).max())
    slope2 = np.polyfit(np.log(etas), np.log(errs2), 1)[0]
    assert 0.9 < slope2 < 1.1
