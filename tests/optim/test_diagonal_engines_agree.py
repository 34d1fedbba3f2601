"""The torch optimizers and the numpy diagonal-network engine must take the same steps.

``sharpness.optim`` (autograd, any model) and ``sharpness.diagonal`` / ``sharpness.bridges.lesam_flow``
(analytic gradients of the L-layer diagonal linear network) implement the same SAM, l_inf-SAM
and LE-SAM updates. Here the torch optimizer trains a diagonal network written as an ``nn.Module``
and every iterate's predictor is compared with the numpy simulation, step for step.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sharpness.bridges.lesam_flow import simulate_lesam
from sharpness.diagonal import gaussian_classes, simulate
from sharpness.optim import build_optimizer

STEPS = 40
ETA = 0.2


class DiagonalNet(nn.Module):
    """``f(x) = <w^(1) * ... * w^(L), x>`` with the layers as rows of one ``(L, d)`` parameter."""

    def __init__(self, theta0: np.ndarray) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor(theta0, dtype=torch.float64))

    def beta(self) -> torch.Tensor:
        return torch.prod(self.w, dim=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.beta()


def _setup() -> tuple[object, np.ndarray]:
    data = gaussian_classes(8, [0.2, 0.5, 1.0, 1.5], noise=0.3, seed=3)
    rng = np.random.default_rng(0)
    theta0 = 0.4 + 0.3 * rng.random((1, 3, 4))  # L = 3, d = 4, unbalanced layers
    return data, theta0


def _torch_betas(data: object, theta0: np.ndarray, name: str, **hparams: object) -> np.ndarray:
    model = DiagonalNet(theta0[0])
    X = torch.tensor(data.X, dtype=torch.float64)  # type: ignore[attr-defined]
    y = torch.tensor(data.y, dtype=torch.float64)  # type: ignore[attr-defined]
    opt = build_optimizer(name, model, lr=ETA, momentum=0.0, weight_decay=0.0,
                          total_steps=STEPS, **hparams)

    def closure() -> torch.Tensor:
        loss = torch.nn.functional.softplus(-y * model(X)).mean()  # mean logistic loss
        loss.backward()
        return loss

    betas = [model.beta().detach().numpy().copy()]
    for _ in range(STEPS):
        opt.zero_grad()
        opt.step(closure)
        betas.append(model.beta().detach().numpy().copy())
    return np.array(betas)


@pytest.mark.parametrize(("torch_name", "method"), [("sgd", "gd"), ("sam", "l2"),
                                                    ("sam_linf", "linf")])
def test_torch_sam_on_a_diagonal_network_matches_diagonal_simulate(torch_name, method):
    data, theta0 = _setup()
    hp = {} if method == "gd" else {"rho": 0.05}
    ours = _torch_betas(data, theta0, torch_name, **hp)
    ref = simulate(data, theta0, method, rho=0.05, eta=ETA, steps=STEPS, clock="original").beta[0]
    assert ref.shape == ours.shape == (STEPS + 1, 4)
    assert np.abs(ours[-1] - ours[0]).max() > 1e-2  # the runs moved
    # torch adds 1e-12 to ||g||; otherwise the same arithmetic up to rounding
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-12)


def test_sam_and_linf_sam_take_different_steps():
    """The comparison above could not pass by accident: the two perturbations differ."""
    data, theta0 = _setup()
    l2 = simulate(data, theta0, "l2", rho=0.05, eta=ETA, steps=STEPS).beta[0]
    linf = simulate(data, theta0, "linf", rho=0.05, eta=ETA, steps=STEPS).beta[0]
    assert np.abs(l2 - linf).max() > 1e-4


@pytest.mark.parametrize("rho_max", [np.inf, 0.08])
def test_torch_lesam_on_a_diagonal_network_matches_simulate_lesam(rho_max):
    data, theta0 = _setup()
    ours = _torch_betas(data, theta0, "lesam", sigma=0.02,
                        rho_max=None if np.isinf(rho_max) else rho_max, varrho=0.0,
                        schedule="fractions", warmup_frac=0.0, anneal_frac=0.0)
    ref = simulate_lesam(data, theta0, sigma=0.02, rho_max=rho_max, eta=ETA, steps=STEPS,
                         clock="original").beta[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-12)
