"""Network gradient flow: RK45 (solve_ivp) and CVODE (BDF + matrix-free GMRES) against the
closed-form flow of linear regression, against each other on small MLPs, their costs on a
stiff flow, and what the records hold (|lambda|max beside S, the first interval's cap)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.linalg import expm
from torch import nn

from sharpness.eos.flow import gradient_flow

METHODS = ["RK45", "cvode"]


def _mse(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return 0.5 * (out - target).square().mean()


@pytest.mark.parametrize("method", METHODS)
def test_linear_regression_flow_and_sharpness(method: str) -> None:
    """L(w) = 0.5 mean (x^T w - y)^2: the Hessian A = X^T X / n is constant, so s_GF is its
    top eigenvalue, and w(t) = w* + expm(-A t)(w0 - w*)."""
    torch.manual_seed(0)
    n, d = 40, 5
    x = torch.randn(n, d) * torch.tensor([2.0, 1.0, 1.0, 0.5, 0.5])
    w_true = torch.randn(d, 1)
    y = x @ w_true
    model = nn.Linear(d, 1, bias=False)
    w0 = model.weight.detach().double().numpy().ravel().copy()

    res = gradient_flow(model, _mse, x, y, loss_goal=1e-6, rtol=1e-8, atol=1e-10,
                        method=method)
    a = (x.T @ x).double().numpy() / n
    top = np.linalg.eigvalsh(a)[-1]
    assert res.status == "ok"
    assert res.method == method
    assert res.s_gf == pytest.approx(top, rel=1e-3)
    assert res.eta_c == pytest.approx(2 / top, rel=1e-3)
    assert np.ptp(res.sharpness) / top < 1e-3  # constant Hessian
    np.testing.assert_allclose(res.abs_sharpness, res.sharpness, rtol=1e-6)  # PSD: |l|max = S
    t_end = res.t[-1]
    w_star = w_true.double().numpy().ravel()
    expected = w_star + expm(-a * t_end) @ (w0 - w_star)
    got = model.weight.detach().double().numpy().ravel()
    np.testing.assert_allclose(got, expected, atol=2e-4)
    assert res.loss[-1] < 1.001e-6 and res.loss[-2] >= 1e-6  # stopped at the goal (event)
    assert (res.jvps > 0) == (method == "cvode")  # only the implicit method multiplies by H


def _mlp_problem(seed: int, activation: type[nn.Module], width: int = 16, n: int = 32,
                 d: int = 10) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    y = torch.randn(n, 1, generator=gen, dtype=torch.float64)
    torch.manual_seed(seed + 1)
    model = nn.Sequential(nn.Linear(d, width), activation(), nn.Linear(width, 1)).double()
    return model, x, y


# the first case in the fast tier; the others, each a few seconds, with the end-to-end tests
@pytest.mark.parametrize(("seed", "activation"), [
    (0, nn.Tanh),
    pytest.param(1, nn.Tanh, marks=pytest.mark.e2e),
    pytest.param(2, nn.GELU, marks=pytest.mark.e2e),
])
def test_cvode_and_rk45_agree_on_small_mlps(seed: int, activation: type[nn.Module]) -> None:
    """The same flow by two integrators: the same s_GF (within 1e-3 relative), the same time
    at which the loss reaches its goal, and the same end point."""
    results, ends = {}, {}
    for method in METHODS:
        model, x, y = _mlp_problem(seed, activation)
        results[method] = gradient_flow(model, _mse, x, y, loss_goal=1e-3, method=method,
                                        rtol=1e-6, atol=1e-9, t_max=1e4)
        ends[method] = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    rk, cv = results["RK45"], results["cvode"]
    assert rk.status == cv.status == "ok"
    assert rk.loss_rises == cv.loss_rises == 0  # a gradient flow's loss never rises
    assert cv.s_gf == pytest.approx(rk.s_gf, rel=1e-3)
    assert cv.t[-1] == pytest.approx(rk.t[-1], rel=1e-3)
    assert cv.nfev > 0 and cv.jvps > 0 and cv.hvps > 0 and rk.jvps == 0
    rel = float((ends["cvode"] - ends["RK45"]).norm() / ends["RK45"].norm())
    assert rel < 1e-3


@pytest.mark.workflow  # a long integration: RK45 spends over 5,000 gradients (about 6 s)
def test_cvode_costs_at_most_a_third_of_rk45_on_a_stiff_flow() -> None:
    """To a loss of 1e-12 the flow spends most of its time in a slow tail with S about 6:
    RK45's step stays near 3 / S, BDF's grows with the path. Costs are counted (gradients +
    2 x Hessian-vector products, a product costing about two gradients), never timed.
    Measured: RK45 6,344 gradients; CVODE 274 gradients + 563 products (cost 1,400)."""
    costs, sgf = {}, {}
    for method in METHODS:
        model, x, y = _mlp_problem(3, nn.Tanh)
        res = gradient_flow(model, _mse, x, y, loss_goal=1e-12, method=method, rtol=1e-5,
                            atol=1e-8, t_max=1e4)
        assert res.status == "ok"
        costs[method], sgf[method] = res.cost, res.s_gf
    assert costs["RK45"] > 5000  # the flow is stiff for the explicit method
    assert costs["cvode"] <= costs["RK45"] / 3
    assert sgf["cvode"] == pytest.approx(sgf["RK45"], rel=1e-3)


class _Quadratic(nn.Module):
    """``model(x) = 0.5 w^T A w`` (x ignored) with a fixed diagonal A: its Hessian is A."""

    def __init__(self, diag: list[float]) -> None:
        super().__init__()
        self.register_buffer("a", torch.tensor(diag, dtype=torch.float64))
        self.w = nn.Parameter(torch.ones(len(diag), dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (0.5 * (self.a * self.w.square()).sum()).expand(x.shape[0])


@pytest.mark.parametrize("method", METHODS)
def test_records_hold_abs_lambda_max_beside_s(method: str) -> None:
    """A Hessian whose largest-magnitude eigenvalue is negative: S = 1, |lambda|max = 3."""
    model = _Quadratic([-3.0, 1.0, 0.5])
    x = torch.zeros(4, 1, dtype=torch.float64)

    def crit(out: torch.Tensor, _y: torch.Tensor) -> torch.Tensor:
        return out.mean()

    res = gradient_flow(model, crit, x, x, loss_goal=-10.0, t_max=0.5, method=method,
                        rtol=1e-7, atol=1e-9)
    assert res.status in ("ok", "t_max")
    np.testing.assert_allclose(res.sharpness, 1.0, rtol=1e-6)
    np.testing.assert_allclose(res.abs_sharpness, 3.0, rtol=1e-6)
    assert res.summary()["abs_s_max"] == pytest.approx(3.0)
    assert res.loss_rises == 0
    if method == "cvode":  # a dominant negative eigenvalue (a saddle): explicit intervals only
        assert res.explicit_intervals == len(res.t) - 1 and res.jvps == 0


def test_first_record_interval_is_capped() -> None:
    """With no curvature scale (record_factor huge) the first record still comes by the time
    the loss would lose half of itself at its initial rate, 0.5 L0 / ||g0||^2."""
    model, x, y = _mlp_problem(0, nn.Tanh)
    with torch.enable_grad():
        loss0 = _mse(model(x), y)
        grads = torch.autograd.grad(loss0, list(model.parameters()))
    cap = 0.5 * float(loss0.detach()) / float(sum(g.square().sum() for g in grads))
    res = gradient_flow(model, _mse, x, y, loss_goal=1e-3, record_factor=1e6,
                        record_first_drop=0.5)
    assert res.t[1] == pytest.approx(cap, rel=1e-9)
    assert len(res.t) >= 3


def test_cvode_step_limit_is_said_in_words_not_as_raw_solver_output(capsys) -> None:
    """SUNDIALS' own "[CVode, Error: -1] ... mxstep" goes nowhere; the log says in words that
    the implicit solver hit its step limit and how the interval is finished."""
    from sharpness.eos.integrators import CvodeIntegrator, FlatModel

    model, x, y = _mlp_problem(3, nn.Tanh)
    flat = FlatModel(model, _mse, x, y, "train", keep_graph=True)
    theta = flat.current()

    def goal(_t: float, th: np.ndarray) -> float:
        return flat.loss(th) - 1e-12
    goal.terminal, goal.direction = True, -1  # type: ignore[attr-defined]
    integ = CvodeIntegrator(flat, theta, goal, 1e-12, 1e4, 1e-5, 1e-8, 20, max_bdf_steps=2)
    integ.advance(50.0, scale=1.0)
    out, err = capsys.readouterr()
    assert "CVode" not in out and "mxstep" not in out + err
    assert "the implicit solver (CVODE, BDF) hit its step limit (2 steps)" in err
    assert "finishing the interval with the explicit RK45" in err
    assert integ.t == pytest.approx(50.0) and integ.explicit_intervals == 1
