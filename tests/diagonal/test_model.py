"""Analytic gradients, perturbations and clocks of the diagonal network against torch autograd."""

import numpy as np
import pytest
import torch

from sharpness.diagonal import (
    gaussian_classes,
    grad,
    init_batch,
    loss,
    perturbation,
    predictor,
    sam_direction,
    single_example,
)
from sharpness.diagonal.model import loss_derivative_scale


def _torch_loss(theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    beta = torch.prod(theta, dim=-2)
    u = y * (beta @ X.T)
    return torch.nn.functional.softplus(-u).mean(-1).sum()


@pytest.mark.parametrize("L", [1, 2, 3, 4])
def test_grad_matches_autograd(L):
    rng = np.random.default_rng(L)
    data = gaussian_classes(7, [0.5, 1.0, 2.0], noise=0.7, seed=L)
    theta = rng.normal(size=(4, L, 3))
    theta[0, 0, 1] = 0.0  # exact zeros must not break the product-except-one
    t = torch.tensor(theta, requires_grad=True)
    _torch_loss(t, torch.tensor(data.X), torch.tensor(data.y)).backward()
    np.testing.assert_allclose(grad(theta, data), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    lv = _torch_loss(torch.tensor(theta[1:2]), torch.tensor(data.X), torch.tensor(data.y)).item()
    assert loss(theta[1:2], data)[0] == pytest.approx(lv, rel=1e-12)


def test_rescaled_clock_is_a_positive_rescaling():
    data = gaussian_classes(5, [1.0, 2.0], noise=0.3)
    theta = init_batch([0.3, 1.0, 4.0], 2, 2)
    g = grad(theta, data, "original")
    gr = grad(theta, data, "rescaled")
    np.testing.assert_allclose(gr * loss_derivative_scale(theta, data)[:, None, None], g, rtol=1e-10)
    # still finite where the original gradient underflows
    big = init_batch([40.0], 2, 2)
    assert np.all(grad(big, data, "original") == 0)  # the original clock's gradient underflows
    assert np.all(np.isfinite(grad(big, data, "rescaled"))) and np.any(grad(big, data, "rescaled") != 0)


def test_perturbations_have_the_right_size_and_sign():
    data = single_example([1.0, 2.0])
    theta = init_batch([0.5, 2.0], 2, 2)
    g = grad(theta, data)
    e2 = perturbation(g, "l2", np.array([0.1, 0.3]))
    np.testing.assert_allclose(np.sqrt((e2**2).sum(axis=(1, 2))), [0.1, 0.3])
    einf = perturbation(g, "linf", 0.2)
    np.testing.assert_allclose(einf, -0.2 * np.ones_like(g))  # ascent: loss falls along +w
    assert np.all(perturbation(np.zeros_like(g), "l2", 0.1) == 0)


def test_sam_direction_matches_autograd_at_perturbed_point():
    data = gaussian_classes(6, [1.0, 3.0], noise=0.5, seed=3)
    theta = np.random.default_rng(0).normal(size=(2, 3, 2))
    t = torch.tensor(theta, requires_grad=True)
    X, y = torch.tensor(data.X), torch.tensor(data.y)
    (g,) = torch.autograd.grad(_torch_loss(t, X, y), t)
    eps = 0.05 * g / g.flatten(1).norm(dim=1)[:, None, None]
    tp = (t + eps).detach().requires_grad_(True)
    _torch_loss(tp, X, y).backward()
    np.testing.assert_allclose(sam_direction(theta, data, "l2", 0.05), tp.grad.numpy(), rtol=1e-9)


def test_balanced_l2_sam_rescaled_field_matches_catalog_formula():
    """Catalog: dw_j/ds = mu_j w_j (1 - rho mu_j / (sqrt2 ||mu * w||)) for L=2, balanced."""
    mu = np.array([1.0, 2.0, 3.0])
    data = single_example(mu)
    w = np.array([0.2, 0.5, 0.9])
    theta = np.stack([w, w])[None]
    rho = 0.3
    field = -sam_direction(theta, data, "l2", rho, "rescaled")[0]
    expected = mu * w * (1 - rho * mu / (np.sqrt(2) * np.linalg.norm(mu * w)))
    np.testing.assert_allclose(field[0], expected, rtol=1e-10)
    np.testing.assert_allclose(field[1], expected, rtol=1e-10)
    np.testing.assert_allclose(predictor(theta)[0], w**2)
