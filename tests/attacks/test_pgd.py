"""PGD: stays in the ball and the image box, lowers accuracy as the radius grows, equals
FGSM at one step, and matches torchattacks when that package is importable."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from sharpness.attacks import pgd_attack, robust_accuracy

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """A small MLP fitted to 600 embedded MNIST digits (about 90% test accuracy)."""
    from sharpness.data import load_dataset

    ds = load_dataset("mnist_embedded", train_size=600, test_size=200)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        opt.zero_grad()
        F.cross_entropy(model(ds.x_train), ds.y_train).backward()
        opt.step()
    return model.eval(), ds.x_test, ds.y_test


@pytest.mark.parametrize("norm,eps", [("linf", 0.1), ("l2", 1.5)])
def test_perturbation_stays_in_ball_and_box(trained, norm, eps):
    model, x, y = trained
    adv = pgd_attack(model, x, y, norm=norm, eps=eps, steps=5, seed=1)
    delta = (adv - x).flatten(1)
    size = delta.abs().amax(1) if norm == "linf" else delta.norm(dim=1)
    assert float(size.max()) <= eps * (1 + 1e-5)
    assert float(adv.min()) >= 0.0 and float(adv.max()) <= 1.0
    assert float(size.max()) > 0.5 * eps  # it does move


@pytest.mark.parametrize("norm,radii", [("linf", [0.0, 0.02, 0.05, 0.1]),
                                        ("l2", [0.0, 0.5, 1.0, 2.0])])
def test_accuracy_falls_with_radius(trained, norm, radii):
    model, x, y = trained
    accs = [robust_accuracy(model, x, y, norm=norm, eps=r, steps=5) for r in radii]
    assert accs[0] > 0.8
    assert all(b <= a + 1e-9 for a, b in zip(accs, accs[1:], strict=False)), accs
    assert accs[-1] < accs[0] - 0.3, accs


def test_one_step_linf_is_fgsm(trained):
    model, x, y = trained
    eps = 0.05
    xg = x.clone().requires_grad_(True)
    F.cross_entropy(model(xg), y).backward()
    fgsm = (x + eps * xg.grad.sign()).clamp(0, 1)
    adv = pgd_attack(model, x, y, norm="linf", eps=eps, steps=1, alpha=eps,
                     random_start=False)
    torch.testing.assert_close(adv, fgsm)


def test_pgd_beats_random_noise_of_same_size(trained):
    model, x, y = trained
    eps = 1.0
    adv = pgd_attack(model, x, y, norm="l2", eps=eps, steps=5)
    noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    noise = noise / noise.flatten(1).norm(dim=1).view(-1, 1, 1, 1) * eps
    with torch.no_grad():
        acc_adv = float((model(adv).argmax(1) == y).float().mean())
        acc_noise = float((model((x + noise).clamp(0, 1)).argmax(1) == y).float().mean())
    assert acc_adv < acc_noise - 0.2


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_matches_torchattacks(trained, norm):
    torchattacks = pytest.importorskip(
        "torchattacks", reason="torchattacks is not installed: its pin requests~=2.25.1 "
        "conflicts with the environment, so the property tests above stand in for it")
    model, x, y = trained
    eps, steps, alpha = (0.05, 5, 0.02) if norm == "linf" else (1.0, 5, 0.3)
    if norm == "linf":
        ref = torchattacks.PGD(model, eps=eps, alpha=alpha, steps=steps, random_start=False)
    else:
        ref = torchattacks.PGDL2(model, eps=eps, alpha=alpha, steps=steps, random_start=False)
    expected = ref(x, y)
    ours = pgd_attack(model, x, y, norm=norm, eps=eps, steps=steps, alpha=alpha,
                      random_start=False)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=0)
