"""Each optimizer's perturbation and update equal their formulas, computed by hand here."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from sharpness.optim import BatchClosure, build_optimizer

RHO = 0.07
LR = 0.1
WD = 0.05  # non-zero: the perturbation must ignore weight decay


def _setup(seed: int = 0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).double()
    x = torch.randn(20, 4, dtype=torch.float64)
    y = torch.randint(0, 3, (20,))
    return model, x, y


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def _grad_at(model, params: dict[str, torch.Tensor], x, y, per_example: bool = False):
    """Gradient of the mean loss at ``params``, computed independently of the optimizer."""
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
    out = functional_call(model, leaves, (x,))
    loss = F.cross_entropy(out, y)
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return dict(zip(leaves, grads, strict=True))


def _norm(d: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.sqrt(sum((v**2).sum() for v in d.values()))


def _displacement_after_first_step(opt, model, x, y) -> dict[str, torch.Tensor]:
    before = _snapshot(model)
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.first_step(zero_grad=True)
    return {n: p.detach() - before[n] for n, p in model.named_parameters()}


def _assert_dicts_close(a, b, rtol=1e-10, atol=1e-12):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=rtol, atol=atol, msg=k)


def test_sam_l2_perturbation_and_full_update():
    model, x, y = _setup()
    theta = _snapshot(model)
    g = _grad_at(model, theta, x, y)
    gn = _norm(g)
    expected = {n: RHO * v / gn for n, v in g.items()}
    opt = build_optimizer("sam", model, lr=LR, momentum=0.0, weight_decay=WD, rho=RHO)
    eps = _displacement_after_first_step(opt, model, x, y)
    _assert_dicts_close(eps, expected)
    assert opt.diagnostics["radius"] == pytest.approx(RHO, rel=1e-10)
    assert opt.diagnostics["g_dot_eps"] == pytest.approx(RHO * float(gn), rel=1e-10)
    # full step from theta: theta - lr * (grad L(theta + eps) + wd * theta)
    model.load_state_dict(theta)
    opt2 = build_optimizer("sam", model, lr=LR, momentum=0.0, weight_decay=WD, rho=RHO)
    opt2.step(BatchClosure(model, x, y))
    g_pert = _grad_at(model, {n: theta[n] + expected[n] for n in theta}, x, y)
    after = _snapshot(model)
    _assert_dicts_close(after, {n: theta[n] - LR * (g_pert[n] + WD * theta[n]) for n in theta})


def test_sam_linf_perturbation():
    model, x, y = _setup(1)
    g = _grad_at(model, _snapshot(model), x, y)
    opt = build_optimizer("sam_linf", model, lr=LR, weight_decay=WD, rho=RHO)
    eps = _displacement_after_first_step(opt, model, x, y)
    _assert_dicts_close(eps, {n: RHO * torch.sign(v) for n, v in g.items()})
    dim = sum(v.numel() for v in g.values())
    assert opt.diagnostics["radius"] == pytest.approx(RHO * math.sqrt(dim), rel=1e-10)


def test_asam_perturbation():
    model, x, y = _setup(2)
    theta = _snapshot(model)
    g = _grad_at(model, theta, x, y)
    eta = 0.01
    t = {n: (theta[n].abs() + eta) if "weight" in n else torch.ones_like(theta[n]) for n in theta}
    tg_norm = _norm({n: t[n] * g[n] for n in g})
    expected = {n: RHO * t[n] ** 2 * g[n] / tg_norm for n in g}
    opt = build_optimizer("asam", model, lr=LR, weight_decay=WD, rho=RHO, eta=eta)
    _assert_dicts_close(_displacement_after_first_step(opt, model, x, y), expected)


def test_esam_coordinate_swp_option_mask():
    """The named per-coordinate variant (swp='coordinate'): eps = m * rho g / (beta ||g||)."""
    model, x, y = _setup(3)
    g = _grad_at(model, _snapshot(model), x, y)
    beta, seed = 0.6, 11
    gen = torch.Generator().manual_seed(seed)
    masks = {n: (torch.rand(v.shape, generator=gen) < beta).double() for n, v in g.items()}
    expected = {n: masks[n] * RHO * g[n] / (_norm(g) + 1e-7) / beta for n in g}
    opt = build_optimizer("esam", model, lr=LR, weight_decay=WD, rho=RHO, beta=beta, seed=seed,
                          swp="coordinate")
    _assert_dicts_close(_displacement_after_first_step(opt, model, x, y), expected)
    kept = torch.cat([m.reshape(-1) for m in masks.values()]).mean()
    assert 0.4 < float(kept) < 0.8  # a real Bernoulli(beta) subset, not all or nothing


def test_esam_data_selection_update():
    """Second gradient on the examples whose loss rise is strictly above the int(gamma n)-th
    largest (the official selection), here with the per-coordinate SWP variant."""
    model, x, y = _setup(4)
    theta = _snapshot(model)
    beta, gamma, seed = 0.5, 0.3, 5
    g = _grad_at(model, theta, x, y)
    gen = torch.Generator().manual_seed(seed)
    eps = {
        n: (torch.rand(v.shape, generator=gen) < beta).double() * RHO * v / (_norm(g) + 1e-7) / beta
        for n, v in g.items()
    }
    pert = {n: theta[n] + eps[n] for n in theta}
    with torch.no_grad():
        rise = F.cross_entropy(functional_call(model, pert, (x,)), y, reduction="none")
        rise -= F.cross_entropy(functional_call(model, theta, (x,)), y, reduction="none")
    cutoff = torch.topk(rise, int(gamma * len(y))).values[-1]
    chosen = torch.nonzero(rise > cutoff).flatten()
    assert len(chosen) == int(gamma * len(y)) - 1
    g_sel = _grad_at(model, pert, x[chosen], y[chosen])
    opt = build_optimizer(
        "esam",
        model,
        lr=LR,
        momentum=0.0,
        weight_decay=0.0,
        rho=RHO,
        beta=beta,
        gamma=gamma,
        seed=seed,
        swp="coordinate",
    )
    opt.step(BatchClosure(model, x, y))
    assert opt.diagnostics["sds"] == 1.0
    assert sorted(opt.last_selection.tolist()) == sorted(chosen.tolist())
    _assert_dicts_close(_snapshot(model), {n: theta[n] - LR * g_sel[n] for n in theta})


def test_esam_plain_closure_falls_back_to_weight_perturbation():
    model, x, y = _setup(5)
    opt = build_optimizer("esam", model, lr=LR)

    def closure():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    opt.step(closure)
    assert opt.diagnostics["sds"] == 0.0


def test_fsam_perturbation_two_steps():
    model, x, y = _setup(6)
    sigma, lmbda = 0.8, 0.7
    opt = build_optimizer(
        "fsam", model, lr=LR, momentum=0.0, weight_decay=WD, rho=RHO, sigma=sigma, lmbda=lmbda
    )
    theta0 = _snapshot(model)
    g0 = _grad_at(model, theta0, x, y)
    eps0 = _displacement_after_first_step(opt, model, x, y)
    _assert_dicts_close(eps0, {n: RHO * v / _norm(g0) for n, v in g0.items()})  # d_0 = g_0
    BatchClosure(model, x, y)()
    opt.second_step(zero_grad=True)
    # a second batch: d_1 = g_1 - sigma * m_0 with m_0 = g_0
    x1, y1 = x.flip(0) * 1.3, y.flip(0)
    theta1 = _snapshot(model)
    g1 = _grad_at(model, theta1, x1, y1)
    d1 = {n: g1[n] - sigma * g0[n] for n in g1}
    eps1 = _displacement_after_first_step(opt, model, x1, y1)
    _assert_dicts_close(eps1, {n: RHO * v / _norm(d1) for n, v in d1.items()})
    # EMA update m_1 = lmbda m_0 + (1 - lmbda) g_1
    names = [n for n, _ in model.named_parameters()]
    for i, n in enumerate(names):
        torch.testing.assert_close(opt._ema[i], lmbda * g0[n] + (1 - lmbda) * g1[n])


def test_eigensam_normalized_direction_option():
    """The named variant direction='normalized': v_perp and d renormalized, ||eps|| = rho."""
    model, x, y = _setup(7)
    alpha = 0.3
    opt = build_optimizer("eigensam", model, lr=LR, weight_decay=WD, rho=RHO, alpha=alpha,
                          direction="normalized")
    theta = _snapshot(model)
    g = torch.cat([v.reshape(-1) for v in _grad_at(model, theta, x, y).values()])
    v = torch.randn(g.numel(), dtype=torch.float64)
    v /= v.norm()
    opt.eigenvector = v.clone()
    g_hat = g / g.norm()
    c = torch.dot(v, g_hat)
    v_perp = (v - c * g_hat) / (v - c * g_hat).norm()
    d = g_hat + alpha * torch.sign(c) * v_perp
    expected = RHO * d / d.norm()
    eps = _displacement_after_first_step(opt, model, x, y)
    torch.testing.assert_close(torch.cat([e.reshape(-1) for e in eps.values()]), expected)
    assert opt.diagnostics["radius"] == pytest.approx(RHO, rel=1e-10)


def test_eigensam_power_iteration_finds_top_eigenvector():
    """Exact (double backward) and finite-difference HVP paths both find the top eigenpair."""
    from sharpness.curvature import dense_hessian

    model, x, y = _setup(8)
    dense = dense_hessian(model, F.cross_entropy, x, y, mode="train")
    values, vectors = torch.linalg.eigh(dense)
    top = values[-1]
    for closure in (
        BatchClosure(model, x, y),
        lambda: F.cross_entropy(model(x), y).backward(),
    ):
        opt = build_optimizer("eigensam", model, lr=LR, power_iters=100)
        estimate = opt.update_eigenvector(closure)
        assert estimate == pytest.approx(float(top), rel=1e-3)
        assert abs(float(torch.dot(opt.eigenvector, vectors[:, -1]))) > 0.99


def test_sgd_is_plain_base_step():
    model, x, y = _setup(9)
    theta = _snapshot(model)
    g = _grad_at(model, theta, x, y)
    opt = build_optimizer("sgd", model, lr=LR, momentum=0.0, weight_decay=WD)
    opt.step(BatchClosure(model, x, y))
    _assert_dicts_close(
        _snapshot(model), {n: theta[n] - LR * (g[n] + WD * theta[n]) for n in theta}
    )
    assert opt.diagnostics["radius"] == 0.0
    assert opt.diagnostics["grad_norm"] == pytest.approx(float(_norm(g)), rel=1e-10)


def test_esam_with_beta_and_gamma_one_is_sam():
    model, x, y = _setup(10)
    twin = _setup(10)[0]
    esam = build_optimizer("esam", model, lr=LR, weight_decay=WD, rho=RHO, beta=1.0, gamma=1.0)
    sam = build_optimizer("sam", twin, lr=LR, weight_decay=WD, rho=RHO)
    for _ in range(3):
        esam.step(BatchClosure(model, x, y))
        sam.step(BatchClosure(twin, x, y))
    # equal up to the guards each official code adds to ||g|| (ESAM 1e-7, SAM 1e-12)
    _assert_dicts_close(_snapshot(model), _snapshot(twin), rtol=1e-7, atol=1e-9)
