"""Norms and sharpness measures against dense / closed-form oracles on tiny models."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sharpness.curvature import dense_hessian
from sharpness.eos.measures import (
    adaptive_sharpness,
    average_sharpness,
    hessian_trace,
    sharpness,
    worst_case_sharpness,
)
from sharpness.eos.norms import l1_norm, l2_norm, nuclear_norm, parameter_norms


def mse(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 0.5 * (out - y).square().sum(dim=1).mean()


@pytest.fixture()
def tiny() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)).double()
    x = torch.randn(20, 4, dtype=torch.float64)
    y = torch.randn(20, 2, dtype=torch.float64)
    return model, x, y


def test_norms_match_numpy() -> None:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Flatten(), nn.Linear(12, 5))
    flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    assert l1_norm(model) == pytest.approx(np.abs(flat).sum(), rel=1e-6)
    assert l2_norm(model) == pytest.approx(np.linalg.norm(flat), rel=1e-6)
    mats = [p.detach().numpy().reshape(p.shape[0], -1) for p in model.parameters() if p.ndim > 1]
    nuc = sum(np.linalg.svd(m, compute_uv=False).sum() for m in mats)
    assert nuclear_norm(model) == pytest.approx(nuc, rel=1e-6)
    assert set(parameter_norms(model)) == {"l1", "l2", "nuclear"}


def test_lanczos_sharpness_matches_dense_hessian(tiny) -> None:
    model, x, y = tiny
    h = dense_hessian(model, mse, x, y, mode="train")
    top = float(torch.linalg.eigvalsh(h)[-1])
    value, vec, hvps = sharpness(model, mse, x, y, tol=1e-10)
    assert value == pytest.approx(top, rel=1e-6)
    warm, _, warm_hvps = sharpness(model, mse, x, y, v0=vec, tol=1e-10)
    assert warm == pytest.approx(top, rel=1e-6)
    assert warm_hvps <= hvps  # the warm start never costs more


def test_trace_close_to_dense(tiny) -> None:
    model, x, y = tiny
    h = dense_hessian(model, mse, x, y, mode="train")
    est = hessian_trace(model, mse, x, y, num_samples=400, seed=0)
    assert est == pytest.approx(float(torch.trace(h)), rel=0.15)


def quadratic_model(a: torch.Tensor, theta0: torch.Tensor) -> tuple[nn.Module, callable]:
    """A 'model' whose loss is 0.5 theta^T A theta (theta = its only parameter)."""
    class Quad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.theta = nn.Parameter(theta0.clone())

        def forward(self, _x: torch.Tensor) -> torch.Tensor:
            return 0.5 * self.theta @ a @ self.theta

    return Quad(), lambda out, _y: out


def test_worst_case_and_average_on_a_quadratic() -> None:
    """At the minimum of 0.5 t^T A t: worst case in the rho-ball = 0.5 lambda_max rho^2, the
    Gaussian average = 0.5 sigma^2 tr A."""
    a = torch.diag(torch.tensor([4.0, 1.0, 0.5], dtype=torch.float64))
    model, crit = quadratic_model(a, torch.zeros(3, dtype=torch.float64))
    dummy = torch.zeros(1)
    worst = worst_case_sharpness(model, crit, dummy, dummy, rho=0.1, steps=60)
    assert worst == pytest.approx(0.5 * 4.0 * 0.01, rel=0.02)
    avg = average_sharpness(model, crit, dummy, dummy, sigma=0.1, num_samples=4000)
    assert avg == pytest.approx(0.5 * 0.01 * 5.5, rel=0.1)
    assert torch.all(model.theta == 0)  # parameters restored


def test_adaptive_sharpness_is_rescaling_invariant_worst_case_is_not() -> None:
    """Multiplying a ReLU layer by c and the next by 1/c leaves the function, and the adaptive
    (|theta|-scaled) measure, unchanged; the plain rho-ball measure changes."""
    torch.manual_seed(0)
    x = torch.randn(30, 3, dtype=torch.float64)
    y = torch.randn(30, 1, dtype=torch.float64)
    net = nn.Sequential(nn.Linear(3, 8, bias=False), nn.ReLU(), nn.Linear(8, 1, bias=False))
    net = net.double()
    scaled = nn.Sequential(nn.Linear(3, 8, bias=False), nn.ReLU(), nn.Linear(8, 1, bias=False))
    scaled = scaled.double()
    with torch.no_grad():
        scaled[0].weight.copy_(net[0].weight * 4.0)
        scaled[2].weight.copy_(net[2].weight / 4.0)
    torch.testing.assert_close(net(x), scaled(x))
    a1 = adaptive_sharpness(net, mse, x, y, rho=0.05, steps=10)
    a2 = adaptive_sharpness(scaled, mse, x, y, rho=0.05, steps=10)
    w1 = worst_case_sharpness(net, mse, x, y, rho=0.05, steps=10)
    w2 = worst_case_sharpness(scaled, mse, x, y, rho=0.05, steps=10)
    assert a1 == pytest.approx(a2, rel=0.05)
    assert abs(w1 - w2) / max(w1, w2) > 0.2


def test_sharpness_of_a_vit_needs_no_fused_attention_double_backward() -> None:
    """ViT Hessians: the CPU flash-attention kernel has no double backward; the measures
    switch to the math kernel (regression: the quick ViT sweep crashed here)."""
    from sharpness.models import build_model

    torch.manual_seed(0)
    model = build_model("vit_small", 10, 3, 16, width=0.125, depth=1, heads=2, patch_size=8)
    x = torch.rand(4, 3, 16, 16)
    y = torch.tensor([0, 1, 2, 3])

    def ce(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(out, target)

    value, _, _ = sharpness(model, ce, x, y)
    assert np.isfinite(value) and value > 0
    assert np.isfinite(hessian_trace(model, ce, x, y, num_samples=2))
