"""Network gradient flow (solve_ivp) against the closed-form flow of linear regression."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.linalg import expm
from torch import nn

from sharpness.eos.flow import gradient_flow


def test_linear_regression_flow_and_sharpness() -> None:
    """L(w) = 0.5 mean (x^T w - y)^2: the Hessian A = X^T X / n is constant, so s_GF is its
    top eigenvalue, and w(t) = w* + expm(-A t)(w0 - w*)."""
    torch.manual_seed(0)
    n, d = 40, 5
    x = torch.randn(n, d) * torch.tensor([2.0, 1.0, 1.0, 0.5, 0.5])
    w_true = torch.randn(d, 1)
    y = x @ w_true
    model = nn.Linear(d, 1, bias=False)
    w0 = model.weight.detach().double().numpy().ravel().copy()

    def crit(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return 0.5 * (out - target).square().mean()

    res = gradient_flow(model, crit, x, y, loss_goal=1e-6, rtol=1e-8, atol=1e-10)
    a = (x.T @ x).double().numpy() / n
    top = np.linalg.eigvalsh(a)[-1]
    assert res.status == "ok"
    assert res.s_gf == pytest.approx(top, rel=1e-3)
    assert res.eta_c == pytest.approx(2 / top, rel=1e-3)
    assert np.ptp(res.sharpness) / top < 1e-3  # constant Hessian
    t_end = res.t[-1]
    w_star = w_true.double().numpy().ravel()
    expected = w_star + expm(-a * t_end) @ (w0 - w_star)
    got = model.weight.detach().double().numpy().ravel()
    np.testing.assert_allclose(got, expected, atol=2e-4)
    assert res.loss[-1] < 1.001e-6 and res.loss[-2] >= 1e-6  # stopped at the goal (event)
