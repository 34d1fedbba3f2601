"""Each optimizer's guard constants (the ``+ 1e-12`` under a norm and the like) as its official
code has them, where they matter: a gradient of norm ~1e-11, at the first step's perturbation
(sources as in ``test_official_order``)."""

from __future__ import annotations

import pytest
import torch

from sharpness.optim import build_optimizer
from tests.optim.bn_net import bn_net, global_norm

LR = 0.05


def _official_eps(name: str, named: list, g: list, hp: dict, v: torch.Tensor | None) -> list:
    n = global_norm(g)
    if name in ("sam", "fsam"):  # fsam's first step: d_0 = g_0
        return [gi * (hp["rho"] / (n + 1e-12)) for gi in g]
    if name == "asam":
        t = [(p.detach().abs() + hp["eta"]) if "weight" in k else torch.ones_like(p)
             for k, p in named]
        tn = global_norm([ti * gi for ti, gi in zip(t, g, strict=True)]) + 1e-16
        return [ti * ti * gi * (hp["rho"] / tn) for ti, gi in zip(t, g, strict=True)]
    if name == "esam":  # the first step keeps every tensor
        return [gi * (hp["rho"] / (n + 1e-7) / hp["beta"]) for gi in g]
    if name == "lesam":
        norm = torch.sqrt(n ** 2 + 1e-12)
        rho_t = hp["sigma"] / (norm + 1e-12)
        return [gi * (rho_t / (norm + 1e-12)) for gi in g]
    assert name == "eigensam" and v is not None
    flat = torch.cat([gi.reshape(-1) for gi in g])
    sign = torch.sign(flat.dot(v))
    hat = flat / (flat.norm() + 1e-12)
    out = hp["rho"] * (hat + hp["alpha"] * sign * (v - hat.dot(v) * hat))
    return list(torch.split(out, [gi.numel() for gi in g]))


@pytest.mark.parametrize(("name", "hp"), [
    ("sam", {"rho": 0.05}), ("asam", {"rho": 0.5, "eta": 0.01}), ("fsam", {"rho": 0.2}),
    ("esam", {"rho": 0.05, "beta": 0.6}),
    ("lesam", {"sigma": 0.35, "rho_max": None, "warmup_epochs": 0, "decay": "none"}),
    ("eigensam", {"rho": 0.05, "alpha": 0.2}),
])
def test_each_guard_is_its_official_codes(name, hp):
    model = bn_net(3)
    named = list(model.named_parameters())
    gen = torch.Generator().manual_seed(4)
    g = [torch.randn(p.shape, generator=gen, dtype=torch.float64) * 1e-12 for _, p in named]
    opt = build_optimizer(name, model, lr=LR, total_steps=10, **hp)
    v = None
    if name == "eigensam":
        v = torch.randn(sum(p.numel() for _, p in named), generator=gen, dtype=torch.float64)
        opt.eigenvector = v = v / v.norm()
    before = [p.detach().clone() for _, p in named]
    expected = _official_eps(name, named, g, hp, v)
    for (_, p), gi in zip(named, g, strict=True):
        p.grad = gi.clone()
    opt.first_step()
    for (k, p), b, e in zip(named, before, expected, strict=True):
        torch.testing.assert_close(p.detach() - b, e.view_as(p), rtol=1e-9, atol=1e-20,
                                   msg=lambda m, k=k: f"{name} {k}: {m}")
