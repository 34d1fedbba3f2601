"""Each optimizer against the rule of its official code, written out here.

* ESAM (dydjw9/Efficient_SAM ``utils/Esam.py``): whole parameter tensors kept with probability
  beta, the norm over the kept tensors only, ``eps = rho g_S / (beta ||g_S||)``, so
  ``||eps|| = rho / beta``; every tensor on the first step; SDS keeps the examples whose loss
  rise is strictly above the ``int(gamma n)``-th largest.
* Eigen-SAM (RitianLuo/EigenSAM ``utils.py``, ``train.py``): the power iteration runs with the
  model in eval mode; ``eps = rho (g_hat + alpha sign(<g, v>) (v - <v, g_hat> g_hat))``
  (not renormalized); ``eps = rho g`` before the first estimate; refresh when the in-epoch
  step is a positive multiple of ``freq``.
* LE-SAM (smithgun2005/LE-SAM-ICML2026 ``lesam.py``): sigma per epoch, 0 at epoch 0, sigma at
  epochs 9, 10 and 160, cosine to 0 at epoch 199 (200 epochs); ``adaptive`` scales by ``|w|``;
  ``topk`` back-propagates the mean of the top ``ceil(k B)`` losses; ``alpha`` subtracts
  ``alpha`` times the clean gradient from the perturbed one.
* BatchNorm in the perturbed pass: updated by ASAM, ESAM and LE-SAM (train mode throughout in
  their official loops), frozen by SAM (davda54), F-SAM and Eigen-SAM (``disable_running_stats``).
* Learning rate: ``CosineAnnealingLR(T_max=epochs)`` stepped once per epoch.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from sharpness.optim import BatchClosure, EpochSigmaSchedule, build_optimizer
from sharpness.optim.esam import ESAM
from sharpness.optim.spec import optimizer_spec, optimizer_specs

RHO = 0.07


def _mlp(seed: int = 0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 5), nn.Tanh(),
                          nn.Linear(5, 3)).double()
    x = torch.randn(20, 4, dtype=torch.float64)
    y = torch.randint(0, 3, (20,))
    return model, x, y


def _bn_net(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def _eps_after_first_step(opt, model, x, y) -> list[torch.Tensor]:
    before = [p.detach().clone() for p in model.parameters()]
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.first_step(zero_grad=True)
    eps = [p.detach() - b for p, b in zip(model.parameters(), before, strict=True)]
    with torch.no_grad():
        for p, b in zip(model.parameters(), before, strict=True):
            p.copy_(b)
    return eps


def _grads(model, x, y) -> list[torch.Tensor]:
    params = dict(model.named_parameters())
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
    loss = F.cross_entropy(functional_call(model, leaves, (x,)), y)
    return list(torch.autograd.grad(loss, list(leaves.values())))


# -- ESAM ------------------------------------------------------------------------------------

def test_esam_swp_keeps_whole_tensors_with_norm_rho_over_beta():
    model, x, y = _mlp(1)
    beta = 0.6
    opt = build_optimizer("esam", model, lr=0.1, rho=RHO, beta=beta, seed=3)
    g = _grads(model, x, y)
    # first step: every tensor kept (the official masks are drawn after a step)
    eps = _eps_after_first_step(opt, model, x, y)
    norm_all = torch.sqrt(sum((v ** 2).sum() for v in g))
    for e, gi in zip(eps, g, strict=True):
        torch.testing.assert_close(e, RHO * gi / (norm_all + 1e-7) / beta)
    kept_counts, fractions = [], []
    for _ in range(200):
        opt.step_count += 1
        eps = _eps_after_first_step(opt, model, x, y)
        kept = [bool(e.abs().sum() > 0) for e in eps]
        kept_counts.append(sum(kept))
        fractions.append(sum(kept) / len(kept))
        if not any(kept):
            continue
        norm_s = torch.sqrt(sum((gi ** 2).sum() for gi, k in zip(g, kept, strict=True) if k))
        for e, gi, k in zip(eps, g, kept, strict=True):
            # whole tensors: a kept tensor is the scaled gradient everywhere, a dropped one zero
            expected = RHO * gi / (norm_s + 1e-7) / beta if k else torch.zeros_like(gi)
            torch.testing.assert_close(e, expected)
        radius = torch.sqrt(sum((e ** 2).sum() for e in eps))
        # the official guard: ||eps|| = rho/beta * ||g_S|| / (||g_S|| + 1e-7)
        official = RHO / beta * float(norm_s) / (float(norm_s) + 1e-7)
        assert float(radius) == pytest.approx(official, rel=1e-12)
        assert opt.diagnostics["radius"] == pytest.approx(official, rel=1e-12)
    assert 0.5 < sum(fractions) / len(fractions) < 0.7  # Bernoulli(beta) per tensor
    assert min(kept_counts) < len(g) and max(kept_counts) > 0


def test_esam_coordinate_variant_is_named_and_smaller():
    model, x, y = _mlp(2)
    beta = 0.6
    opt = build_optimizer("esam", model, lr=0.1, rho=RHO, beta=beta, swp="coordinate", seed=0)
    eps = _eps_after_first_step(opt, model, x, y)
    # per-coordinate mask: tensors are partly kept
    partial = [0 < float((e != 0).double().mean()) < 1 for e in eps if e.numel() > 4]
    assert any(partial)
    radius = float(torch.sqrt(sum((e ** 2).sum() for e in eps)))
    assert radius < RHO / beta * 0.95
    with pytest.raises(ValueError, match="swp"):
        build_optimizer("esam", model, swp="layer")


def test_esam_sds_selection_is_strictly_above_the_kth_largest():
    rise = torch.tensor([0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 0.0])
    # gamma 0.5 of 10: the 5th largest is 0.5; strictly above it: 0.9, 0.8, 0.7, 0.6
    assert sorted(ESAM.select(rise, 0.5).tolist()) == [2, 4, 6, 8]
    assert ESAM.select(rise, 0.99).tolist() == list(range(10))


# -- Eigen-SAM -------------------------------------------------------------------------------

def test_eigensam_power_iteration_runs_in_eval_mode():
    model = _bn_net(0)
    x, y = torch.randn(16, 5), torch.randint(0, 3, (16,))
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(x * 2 + 1)  # running statistics differ from the batch's
    seen: list[bool] = []
    model[1].register_forward_hook(lambda m, i, o: seen.append(m.training))
    opt = build_optimizer("eigensam", model, lr=0.1, power_iters=40)
    stats = (model[1].running_mean.clone(), int(model[1].num_batches_tracked))
    opt.update_eigenvector(BatchClosure(model, x, y))
    assert seen and not any(seen)  # every forward of the estimate in eval mode
    assert model.training and model[1].training  # restored
    assert torch.equal(model[1].running_mean, stats[0])
    assert int(model[1].num_batches_tracked) == stats[1]
    # the estimate is the top eigenvector of the eval-mode Hessian
    from sharpness.curvature import dense_hessian
    dense = dense_hessian(model, F.cross_entropy, x, y, mode="eval")
    values, vectors = torch.linalg.eigh(dense.double())
    top = vectors[:, values.abs().argmax()]
    assert abs(float(torch.dot(opt.eigenvector.double(), top))) > 0.95


def test_eigensam_official_perturbation_and_first_steps():
    model, x, y = _mlp(3)
    alpha = 0.3
    opt = build_optimizer("eigensam", model, lr=0.1, rho=RHO, alpha=alpha)
    g = torch.cat([v.reshape(-1) for v in _grads(model, x, y)])
    # before any estimate: eps = rho * g (official first_step with normalization=False)
    eps = torch.cat([e.reshape(-1) for e in _eps_after_first_step(opt, model, x, y)])
    torch.testing.assert_close(eps, RHO * g)
    v = torch.randn(g.numel(), dtype=torch.float64)
    v /= v.norm()
    opt.eigenvector = v.clone()
    g_hat = g / g.norm()
    v_perp = v - torch.dot(v, g_hat) * g_hat  # not renormalized
    expected = RHO * (g_hat + alpha * torch.sign(torch.dot(g, v)) * v_perp)
    eps = torch.cat([e.reshape(-1) for e in _eps_after_first_step(opt, model, x, y)])
    torch.testing.assert_close(eps, expected)
    assert float(eps.norm()) == pytest.approx(
        RHO * math.sqrt(1 + alpha ** 2 * float(v_perp.norm()) ** 2), rel=1e-10)


def test_eigensam_refreshes_at_positive_multiples_of_freq_within_each_epoch():
    model, _, _ = _mlp(4)
    opt = build_optimizer("eigensam", model, eig_every=3, steps_per_epoch=7)
    due = []
    for step in range(16):
        opt.step_count = step
        if opt.refresh_due():
            due.append(step)
    assert due == [3, 6, 10, 13]  # in-epoch steps 3, 6 of epochs 0 and 1; never step 0 or 7


# -- LE-SAM ----------------------------------------------------------------------------------

def test_lesam_sigma_schedule_official_epochs():
    s = EpochSigmaSchedule(0.35, total_epochs=200)  # official defaults: 10 / 160 / cosine / 0
    assert s.value(0) == 0.0
    assert s.value(5) == pytest.approx(0.35 * 5 / 9)
    assert s.value(9) == pytest.approx(0.35)
    assert s.value(10) == pytest.approx(0.35)
    assert s.value(160) == pytest.approx(0.35)
    assert s.value(180) == pytest.approx(0.35 * 0.5 * (1 + math.cos(math.pi * 20 / 39)))
    assert s.value(199) == pytest.approx(0.0, abs=1e-15)


def test_lesam_optimizer_uses_the_epoch_schedule_and_cosine_epoch_lr():
    from sharpness.train.schedule import lr_at
    model, x, y = _mlp(5)
    spe = 3
    opt = build_optimizer("lesam", model, lr=0.05, total_steps=200 * spe, steps_per_epoch=spe,
                          sigma=0.35, rho_max=999.0)
    assert opt.hparams["warmup_epochs"] == 10 and opt.hparams["decay_start"] == 160
    assert opt.hparams["sigma_min"] == 0.0 and opt.hparams["bn_second_pass"] == "update"
    for epoch, sigma in ((0, 0.0), (9, 0.35), (10, 0.35), (160, 0.35), (199, 0.0)):
        for within in range(spe):
            opt.step_count = epoch * spe + within
            assert opt.current_sigma() == pytest.approx(sigma, abs=1e-15)
    cfg = {"lr": 0.05, "warmup_steps": 0, "lr_schedule": "cosine_epoch", "epochs": 200}
    for step in range(spe):
        assert lr_at(cfg, step, 200 * spe) == 0.05
    assert lr_at(cfg, spe, 200 * spe) == pytest.approx(0.05 * 0.5 * (1 + math.cos(math.pi / 200)))
    assert lr_at(cfg, 199 * spe + 2, 200 * spe) == pytest.approx(
        0.05 * 0.5 * (1 + math.cos(math.pi * 199 / 200)))


def test_lesam_rho_max_999_never_clips_and_03_does():
    model, x, y = _mlp(6)
    g = torch.cat([v.reshape(-1) for v in _grads(model, x, y)])
    for rho_max, clipped in ((999.0, 0.0), (0.3, 1.0)):
        model, x, y = _mlp(6)
        opt = build_optimizer("lesam", model, total_steps=10, sigma=0.35, rho_max=rho_max,
                              warmup_epochs=0)
        eps = torch.cat([e.reshape(-1) for e in _eps_after_first_step(opt, model, x, y)])
        assert opt.diagnostics["clipped"] == clipped
        rho = min(0.35 / float(g.norm()), rho_max)
        torch.testing.assert_close(eps, rho * g / g.norm())
    assert 0.35 / float(g.norm()) > 0.3  # the 0.3 clip binds at this gradient


def test_lesam_adaptive_scales_by_abs_w():
    model, x, y = _mlp(7)
    w = torch.cat([p.detach().abs().reshape(-1) for p in model.parameters()])
    g = torch.cat([v.reshape(-1) for v in _grads(model, x, y)])
    opt = build_optimizer("lesam", model, total_steps=10, sigma=0.02, rho_max=None,
                          warmup_epochs=0, adaptive=True)
    eps = torch.cat([e.reshape(-1) for e in _eps_after_first_step(opt, model, x, y)])
    tg = w * g
    torch.testing.assert_close(eps, (0.02 / tg.norm()) * tg / tg.norm())


def test_lesam_topk_backpropagates_the_top_losses():
    model, x, y = _mlp(8)
    twin, _, _ = _mlp(8)
    frac = 0.25
    opt = build_optimizer("lesam", model, lr=1.0, momentum=0.0, weight_decay=0.0,
                          total_steps=10, sigma=0.0, warmup_epochs=0, topk=frac)
    theta = [p.detach().clone() for p in twin.parameters()]
    losses = F.cross_entropy(twin(x), y, reduction="none")
    k = math.ceil(frac * len(y))
    top = torch.topk(losses.detach(), k).indices
    g_top = torch.autograd.grad(losses[top].mean(), list(twin.parameters()))
    opt.step(BatchClosure(model, x, y))  # sigma 0: eps = 0, both passes at theta
    for p, t, gt in zip(model.parameters(), theta, g_top, strict=True):
        torch.testing.assert_close(p.detach(), t - gt)
    with pytest.raises(ValueError, match="losses_with_graph"):
        build_optimizer("lesam", model, total_steps=10, topk=0.5).step(
            lambda: F.cross_entropy(model(x), y).backward())


def test_lesam_alpha_subtracts_the_clean_gradient():
    model, x, y = _mlp(9)
    twin, _, _ = _mlp(9)
    alpha = 0.4
    opt = build_optimizer("lesam", model, lr=1.0, momentum=0.0, weight_decay=0.0,
                          total_steps=10, sigma=0.05, rho_max=None, warmup_epochs=0,
                          alpha=alpha)
    theta = [p.detach().clone() for p in twin.parameters()]
    g = _grads(twin, x, y)
    flat = torch.cat([v.reshape(-1) for v in g])
    rho = 0.05 / float(flat.norm())
    with torch.no_grad():
        for p, gi in zip(twin.parameters(), g, strict=True):
            p.add_(rho * gi / flat.norm())
    g_pert = _grads(twin, x, y)
    opt.step(BatchClosure(model, x, y))
    for p, t, gp, gc in zip(model.parameters(), theta, g_pert, g, strict=True):
        torch.testing.assert_close(p.detach(), t - (gp - alpha * gc))


# -- BatchNorm in the second pass --------------------------------------------------------------

#: forward passes in train mode beyond the clean one and the perturbed one: ESAM's no-grad
#: perturbed pass over the whole batch (for SDS) before its selected perturbed pass
EXTRA_BN_PASSES = {"esam": 1}
#: every two-pass optimizer, from the declarations, so a new one is checked too
TWO_PASS = sorted(n for n, s in optimizer_specs().items() if s.passes_per_step > 1)


def test_every_two_pass_optimizer_declares_its_batchnorm_second_pass():
    for name in TWO_PASS:
        spec = optimizer_spec(name)
        assert "bn_second_pass" in spec.defaults, name
        assert spec.sources["bn_second_pass"].startswith(("official:", "choice:")), name


@pytest.mark.parametrize("name", TWO_PASS)
def test_batchnorm_second_pass_follows_each_official_loop(name):
    model = _bn_net(1)
    x, y = torch.randn(12, 5), torch.randint(0, 3, (12,))
    opt = build_optimizer(name, model, lr=0.05, total_steps=4)
    official = optimizer_spec(name).defaults["bn_second_pass"]
    assert opt.hparams["bn_second_pass"] == official
    opt.step(BatchClosure(model, x, y))
    passes = {"freeze": 1, "update": 2}[official] + EXTRA_BN_PASSES.get(name, 0)
    assert int(model[1].num_batches_tracked) == passes
    with pytest.raises(ValueError, match="bn_second_pass"):
        build_optimizer(name, model, total_steps=4, bn_second_pass="sometimes")


def test_asam_official_scaling_matches_samsung_rule():
    """SamsungLabs/ASAM asam.py: T = |w| + eta on tensors named 'weight', eps = rho T^2 g/||T g||."""
    model, x, y = _mlp(10)
    eta = 0.0
    opt = build_optimizer("asam", model, lr=0.1, rho=0.5, eta=eta)
    g = _grads(model, x, y)
    t = [(p.detach().abs() + eta) if "weight" in n else torch.ones_like(p)
         for n, p in model.named_parameters()]
    tg_norm = torch.sqrt(sum(((ti * gi) ** 2).sum() for ti, gi in zip(t, g, strict=True)))
    eps = _eps_after_first_step(opt, model, x, y)
    for e, ti, gi in zip(eps, t, g, strict=True):
        torch.testing.assert_close(e, 0.5 * ti * ti * gi / tg_norm)
