"""Projected gradient descent (Madry et al., ICLR 2018) in the L2 and L_inf balls.

PGD maximises the cross-entropy of a model over ``||delta|| <= eps`` (and ``x + delta`` in
``[0, 1]``) by ``steps`` ascent steps of size ``alpha``, each followed by a projection:

* L_inf: ``delta <- clip(delta + alpha * sign(grad), -eps, eps)``;
* L2: ``delta <- P_eps(delta + alpha * grad / ||grad||_2)`` with ``P_eps`` the rescaling onto
  the ball of radius ``eps`` (per example).

The update rules and the random start (uniform in the L_inf box; for L2 a uniform direction
with a radius uniform in ``[0, eps]``, as torchattacks does) follow torchattacks' ``PGD`` and
``PGDL2``, which the tests compare against when torchattacks is importable. The model is put
in eval mode for the attack (BatchNorm running statistics, no dropout) and restored after.
Randomness comes from a seeded ``torch.Generator``, so attacks are reproducible.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

NORMS = ("l2", "linf")
_TINY = 1e-10  # as torchattacks (eps_for_division), so the two agree on tiny gradients


def _per_example_norm(t: Tensor) -> Tensor:
    return t.flatten(1).norm(dim=1).view(-1, *([1] * (t.ndim - 1)))


def _project(delta: Tensor, norm: str, eps: float) -> Tensor:
    if norm == "linf":
        return delta.clamp(-eps, eps)
    factor = (eps / (_per_example_norm(delta) + _TINY)).clamp(max=1.0)
    return delta * factor


def _random_start(x: Tensor, norm: str, eps: float, generator: torch.Generator) -> Tensor:
    if norm == "linf":
        u = torch.rand(x.shape, generator=generator, dtype=x.dtype, device="cpu").to(x.device)
        return (2 * u - 1) * eps
    d = torch.randn(x.shape, generator=generator, dtype=x.dtype, device="cpu").to(x.device)
    d = d / (_per_example_norm(d) + _TINY)
    r = torch.rand((x.shape[0],), generator=generator, dtype=x.dtype, device="cpu").to(x.device)
    return d * (r * eps).view(-1, *([1] * (x.ndim - 1)))


def pgd_attack(model: nn.Module, x: Tensor, y: Tensor, *, norm: str, eps: float,
               steps: int = 10, alpha: float | None = None, random_start: bool = True,
               seed: int = 0) -> Tensor:
    """Adversarial examples ``x + delta`` with ``||delta||_norm <= eps`` and pixels in [0, 1].

    ``alpha`` defaults to ``2.5 * eps / steps`` (Madry et al.'s rule of thumb). ``eps = 0``
    returns ``x`` unchanged. With ``steps=1``, ``random_start=False`` and ``alpha=eps`` the
    L_inf attack is exactly FGSM.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if eps < 0 or steps < 1:
        raise ValueError(f"need eps >= 0 and steps >= 1, got eps={eps}, steps={steps}")
    if eps == 0:
        return x.detach().clone()
    alpha = 2.5 * eps / steps if alpha is None else alpha
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    x = x.detach()
    delta = _random_start(x, norm, eps, generator) if random_start else torch.zeros_like(x)
    delta = (x + delta).clamp(0, 1) - x
    try:
        for _ in range(steps):
            delta.requires_grad_(True)
            loss = F.cross_entropy(model(x + delta), y)
            (grad,) = torch.autograd.grad(loss, delta)
            with torch.no_grad():
                if norm == "linf":
                    step = alpha * grad.sign()
                else:
                    step = alpha * grad / (_per_example_norm(grad) + _TINY)
                delta = _project(delta + step, norm, eps)
                delta = (x + delta).clamp(0, 1) - x
    finally:
        model.train(was_training)
    return (x + delta).detach()


@torch.no_grad()
def _accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    return float((model(x).argmax(1) == y).float().mean())


def robust_accuracy(model: nn.Module, x: Tensor, y: Tensor, *, norm: str, eps: float,
                    steps: int = 10, alpha: float | None = None, seed: int = 0,
                    batch_size: int = 500) -> float:
    """Accuracy of ``model`` (eval mode) on PGD examples of ``(x, y)``, in batches."""
    was_training = model.training
    model.eval()
    correct, total = 0.0, 0
    for start in range(0, len(x), batch_size):
        xb, yb = x[start:start + batch_size], y[start:start + batch_size]
        adv = pgd_attack(model, xb, yb, norm=norm, eps=eps, steps=steps, alpha=alpha,
                         seed=seed + start)
        correct += _accuracy(model, adv, yb) * len(yb)
        total += len(yb)
    model.train(was_training)
    return correct / max(total, 1)
