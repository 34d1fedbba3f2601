"""The logged terms add up: L(theta + eps) - L(theta) = <g, eps> + 0.5 eps^T H eps + O(rho^3)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from sharpness.curvature import HessianOperator, curvature_term
from sharpness.optim import BatchClosure, build_optimizer


@pytest.mark.parametrize("name", ["sam", "lesam"])
def test_second_order_expansion_of_logged_rise(name):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 3)).double()
    x, y = torch.randn(30, 5, dtype=torch.float64), torch.randint(0, 3, (30,))
    hparams = {"rho": 0.02} if name == "sam" else {"sigma": 0.005, "rho_max": 1.0}
    opt = (
        build_optimizer(
            name,
            model,
            lr=0.0,
            momentum=0.0,
            weight_decay=0.0,
            total_steps=100,
            schedule="fractions",
            warmup_frac=0.0,
            anneal_frac=0.0,
            **hparams,
        )
        if name == "lesam"
        else build_optimizer(name, model, lr=0.0, momentum=0.0, **hparams)
    )
    op = HessianOperator(model, F.cross_entropy, (x, y), mode="train")
    opt.step(BatchClosure(model, x, y))  # lr = 0: theta unchanged, so op is at theta
    d = opt.diagnostics
    eps = opt.perturbation_vector()
    assert float(eps.norm()) == pytest.approx(d["radius"], rel=1e-12)
    curv = curvature_term(op, eps)
    rise = d["perturbed_loss"] - d["loss"]
    assert abs(curv) > 0
    # third-order remainder is small against the curvature term
    assert abs(rise - (d["g_dot_eps"] + curv)) < 0.05 * abs(curv)


def test_eval_mode_terms_add_up_with_batchnorm():
    """In eval mode (running statistics) the expansion of the rise holds to third order even
    with BatchNorm; its first-order term is <grad L_eval, eps>."""
    from sharpness.lesam.signal import eval_mode_terms

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 12), nn.BatchNorm1d(12), nn.Tanh(),
                          nn.Linear(12, 3)).double()
    x, y = torch.randn(30, 5, dtype=torch.float64), torch.randint(0, 3, (30,))
    model.train()
    model(x)  # running statistics away from their init
    eps = 1e-2 * torch.randn(sum(p.numel() for p in model.parameters()), dtype=torch.float64)
    terms = eval_mode_terms(model, F.cross_entropy, x, y, eps)
    assert model.training  # the caller's model is untouched
    resid = terms["rise_eval"] - terms["g_dot_eps_eval"] - terms["curvature_eval"]
    assert abs(terms["curvature_eval"]) > 0
    assert abs(resid) < 0.05 * abs(terms["curvature_eval"])
