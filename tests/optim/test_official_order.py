"""Each optimizer step by step against its official training loop, on a BatchNorm CNN.

The reference loops below are written here, in plain torch, from what each official repository
does (the order of passes, the train/eval mode of each forward, how BatchNorm's running
statistics are treated, each guard constant); none of their code is copied:

* SAM, davda54/sam ``example/train.py``: clean pass (statistics updated), ``first_step`` with
  ``rho / (||g|| + 1e-12)``, perturbed pass with ``disable_running_stats`` (momentum 0),
  restore, base step.
* ASAM, SamsungLabs/ASAM ``example_cifar.py`` + ``asam.py``: train mode in both passes,
  ``T = |w| + eta`` on ``weight`` tensors, ``eps = rho T^2 g / (||T g|| + 1e-16)``, restore by
  subtraction.
* ESAM, dydjw9/Efficient_SAM ``utils/Esam.py``: dropped tensors take no gradient in the clean
  pass, ``eps = rho g / (||g_S|| + 1e-7) / beta``, a no-grad perturbed pass of the whole batch,
  then the examples whose loss rose more than the ``int(gamma n)``-th largest, all in train
  mode; restore by subtraction. The masks are the only randomness: the reference takes ours
  (``last_masks``), which ``test_official_recipes`` checks are Bernoulli(beta) per tensor.
* F-SAM, nblt/F-SAM ``train.py`` + ``utils.py``: as SAM with ``d = g - sigma m``,
  ``m <- lmbda m + (1 - lmbda) g`` (``m_0 = g_0``).
* Eigen-SAM, RitianLuo/EigenSAM ``train.py`` + ``utils.py``: when the in-epoch step is a
  positive multiple of ``freq``, the eigenvector is estimated *before* the clean pass, in eval
  mode (BatchNorm on running statistics that have not seen the batch), by 5 products
  ``v <- H v / sqrt(||H v||^2 + 1e-12)`` from a Gaussian start; the gradient is replaced by
  ``g/(||g|| + 1e-12) + alpha sign(<g, v>) v_perp``; ``first_step`` without normalization
  (``eps = rho * grad``); perturbed pass with frozen statistics.
* LE-SAM, smithgun2005/LE-SAM-ICML2026 ``lesam.py``: train mode in both passes,
  ``||g|| = sqrt(sum g^2 + eps)``, ``rho_t = min(sigma / (||g|| + eps), rho_max)``,
  ``e = g rho_t / (||g|| + eps)``, restore by subtraction.

Float64; every step compares parameters, BatchNorm running statistics and the train/eval mode
of every forward pass. ``sam_linf`` has no official code (the minorfirst paper's own rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from sharpness.optim import BatchClosure, build_optimizer
from tests.optim.bn_net import bn_net, global_norm

LR, MOMENTUM, WD = 0.05, 0.9, 5e-4
STEPS = 6
TOL = {"rtol": 1e-10, "atol": 1e-12}


def _batches(seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 2, 5, 5, generator=gen, dtype=torch.float64) * (1 + 0.3 * t) + t,
             torch.randint(0, 4, (8,), generator=gen)) for t in range(STEPS)]


def _sgd(model: nn.Module) -> torch.optim.SGD:
    return torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)


class Recorder:
    """Records, for every forward of the BatchNorm layer, its mode and running mean."""

    def __init__(self, model: nn.Module) -> None:
        self.bn = model[1]
        self.calls: list[tuple[bool, torch.Tensor]] = []
        self.bn.register_forward_pre_hook(
            lambda m, _: self.calls.append((m.training, m.running_mean.clone())))

    def take(self) -> list[tuple[bool, torch.Tensor]]:
        calls, self.calls = self.calls, []
        return calls


def _bn_momentum(model: nn.Module, momentum: float | None) -> None:
    """davda54's ``disable_running_stats`` (0) / ``enable_running_stats`` (back to 0.1)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = momentum


def _ce(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x), y)


# -- the reference loops (one step each) ----------------------------------------------------

def _ref_sam_like(model, base, x, y, direction: Callable[[list], list], guard: float,
                  rho: float, freeze: bool) -> None:
    params = list(model.parameters())
    base.zero_grad()
    _bn_momentum(model, 0.1)
    _ce(model, x, y).backward()
    d = direction([p.grad for p in params])
    scale = rho / (global_norm(d) + guard)
    old = [p.detach().clone() for p in params]
    with torch.no_grad():
        for p, di in zip(params, d, strict=True):
            p.add_(di * scale)
    _perturbed_pass_restore_step(model, base, x, y, params, old, freeze)


def _perturbed_pass_restore_step(model, base, x, y, params: list, old: list,
                                 freeze: bool) -> None:
    """davda54's ``second_step``: the perturbed pass (running statistics frozen with
    ``freeze``), the weights restored to ``old``, the base step, the statistics back on."""
    base.zero_grad()
    if freeze:
        _bn_momentum(model, 0.0)
    _ce(model, x, y).backward()
    with torch.no_grad():
        for p, o in zip(params, old, strict=True):
            p.copy_(o)
    base.step()
    _bn_momentum(model, 0.1)


def _ref_asam(model, base, x, y, rho: float, eta: float) -> None:
    named = list(model.named_parameters())
    base.zero_grad()
    _ce(model, x, y).backward()
    with torch.no_grad():
        t = {n: (p.abs() + eta) if "weight" in n else None for n, p in named}
        tg = [p.grad * t[n] if t[n] is not None else p.grad for n, p in named]
        wnorm = global_norm(tg) + 1e-16
        eps = [(g * t[n] if t[n] is not None else g) * (rho / wnorm)
               for (n, _), g in zip(named, tg, strict=True)]
        for (_, p), e in zip(named, eps, strict=True):
            p.add_(e)
    base.zero_grad()
    _ce(model, x, y).backward()
    with torch.no_grad():
        for (_, p), e in zip(named, eps, strict=True):
            p.sub_(e)
    base.step()


def _ref_esam(model, base, x, y, rho: float, beta: float, gamma: float,
              keep: list[bool]) -> None:
    params = list(model.parameters())
    base.zero_grad(set_to_none=True)
    for p, k in zip(params, keep, strict=True):
        p.requires_grad_(k)
    before = F.cross_entropy(model(x), y, reduction="none")
    before.mean().backward()
    l_before = before.detach()
    with torch.no_grad():
        kept = [p for p in params if p.grad is not None]
        scale = rho / (global_norm([p.grad for p in kept]) + 1e-7) / beta
        eps = {id(p): p.grad * scale for p in kept}
        for p in params:
            p.requires_grad_(True)
            if id(p) in eps:
                p.add_(eps[id(p)])
    base.zero_grad(set_to_none=True)
    with torch.no_grad():
        rise = F.cross_entropy(model(x), y, reduction="none") - l_before
        cutoff = torch.topk(rise, int(len(y) * gamma)).values[-1]
        chosen = rise > cutoff
    F.cross_entropy(model(x[chosen]), y[chosen], reduction="none").mean().backward()
    with torch.no_grad():
        for p in params:
            if id(p) in eps:
                p.sub_(eps[id(p)])
    base.step()


def _ref_eigen_estimate(model, x, y, v: list[torch.Tensor]) -> list[torch.Tensor]:
    params = list(model.parameters())
    model.eval()
    grads = torch.autograd.grad(_ce(model, x, y), params, create_graph=True)
    for i in range(5):
        hv = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=i < 4)
        norm = torch.sqrt(sum((h ** 2).sum() for h in hv) + 1e-12)
        v = [h / norm for h in hv]
    model.train()
    return [t.detach() for t in v]


def _ref_eigensam_step(model, base, x, y, v, rho: float, alpha: float) -> None:
    params = list(model.parameters())
    base.zero_grad()
    _bn_momentum(model, 0.1)
    _ce(model, x, y).backward()
    with torch.no_grad():
        if v is not None:
            g = torch.cat([p.grad.reshape(-1) for p in params])
            vf = torch.cat([t.reshape(-1) for t in v])
            sign = torch.sign(g.dot(vf))
            g = g / (g.norm() + 1e-12)
            g = g + alpha * sign * (vf - g.dot(vf) * g)
            start = 0
            for p in params:
                p.grad.copy_(g[start:start + p.numel()].view_as(p))
                start += p.numel()
        old = [p.detach().clone() for p in params]
        for p in params:
            p.add_(p.grad * rho)
    _perturbed_pass_restore_step(model, base, x, y, params, old, freeze=True)


def _ref_lesam(model, base, x, y, sigma: float, rho_max: float, eps: float = 1e-12) -> None:
    params = list(model.parameters())
    loss = _ce(model, x, y)
    base.zero_grad(set_to_none=True)
    loss.backward()
    with torch.no_grad():
        norm = torch.sqrt(sum(p.grad.norm(p=2) ** 2 for p in params) + eps)
        rho_t = min(sigma / (norm + eps), rho_max)
        factor = rho_t / (norm + eps)
        moved = [p.grad * factor for p in params]
        for p, e in zip(params, moved, strict=True):
            p.add_(e)
    base.zero_grad(set_to_none=True)
    _ce(model, x, y).backward()
    with torch.no_grad():
        for p, e in zip(params, moved, strict=True):
            p.sub_(e)
    base.step()


# -- the comparison ---------------------------------------------------------------------------

def _assert_same_state(ours: nn.Module, ref: nn.Module, step: int) -> None:
    for (name, a), b in zip(ours.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a.detach(), b.detach(), **TOL,
                                   msg=lambda m, n=name: f"step {step}, {n}: {m}")
    for buf in ("running_mean", "running_var"):
        torch.testing.assert_close(getattr(ours[1], buf), getattr(ref[1], buf), **TOL,
                                   msg=lambda m, b=buf: f"step {step}, BN {b}: {m}")


def _assert_same_passes(ours: list, ref: list, step: int) -> None:
    assert [mode for mode, _ in ours] == [mode for mode, _ in ref], f"step {step}: modes"
    for (_, a), (_, b) in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, **TOL)


def _run(name: str, reference: Callable, hparams: dict, *, steps_per_epoch: int | None = None,
         after: Callable | None = None) -> None:
    model, ref = bn_net(), bn_net()
    ref.load_state_dict(model.state_dict())
    opt = build_optimizer(name, model, lr=LR, momentum=MOMENTUM, weight_decay=WD,
                          total_steps=STEPS, steps_per_epoch=steps_per_epoch, **hparams)
    base = _sgd(ref)
    rec_ours, rec_ref = Recorder(model), Recorder(ref)
    model.train()
    ref.train()
    for t, (x, y) in enumerate(_batches()):
        opt.step(BatchClosure(model, x, y))
        reference(t, ref, base, x, y, opt)
        _assert_same_passes(rec_ours.take(), rec_ref.take(), t)
        _assert_same_state(model, ref, t)
        if after is not None:
            after(t, opt)


def test_sam_step_by_step_matches_davda54():
    _run("sam", lambda t, m, b, x, y, o: _ref_sam_like(m, b, x, y, list, 1e-12, 0.05, True),
         {"rho": 0.05})


def test_asam_step_by_step_matches_samsunglabs():
    _run("asam", lambda t, m, b, x, y, o: _ref_asam(m, b, x, y, 0.5, 0.01),
         {"rho": 0.5, "eta": 0.01})


def test_esam_step_by_step_matches_efficient_sam():
    def reference(t, m, b, x, y, opt):
        keep = [bool(mask.flatten()[0]) for mask in opt.last_masks]
        _ref_esam(m, b, x, y, 0.05, 0.6, 0.5, keep)

    _run("esam", reference, {"rho": 0.05, "beta": 0.6, "gamma": 0.5})


def test_fsam_step_by_step_matches_nblt():
    ema: dict[int, torch.Tensor] = {}

    def direction(grads: list) -> list:
        out = []
        for i, g in enumerate(grads):
            if i not in ema:
                ema[i] = g.clone()
                out.append(g.clone())
            else:
                out.append(g - ema[i] * 1.0)
                ema[i] = ema[i] * 0.6 + g * (1 - 0.6)
        return out

    _run("fsam", lambda t, m, b, x, y, o: _ref_sam_like(m, b, x, y, direction, 1e-12, 0.2, True),
         {"rho": 0.2, "sigma": 1.0, "lmbda": 0.6})


@pytest.mark.parametrize("rho_max", [999.0, 0.3])
def test_lesam_step_by_step_matches_official(rho_max):
    sigma = 0.35
    _run("lesam", lambda t, m, b, x, y, o: _ref_lesam(m, b, x, y, sigma, rho_max),
         {"sigma": sigma, "rho_max": rho_max, "warmup_epochs": 0, "decay": "none"},
         steps_per_epoch=2)


def test_eigensam_step_by_step_matches_official_order():
    """The refresh runs before the clean pass, in eval mode, on pre-batch running statistics."""
    freq, per_epoch, alpha, rho = 2, 3, 0.2, 0.05
    model_params = sum(p.numel() for p in bn_net().parameters())
    gen = torch.Generator().manual_seed(0)  # the optimizer's seed: the same Gaussian start
    start = torch.randn(model_params, generator=gen, dtype=torch.float64)
    shapes = [p.shape for p in bn_net().parameters()]
    state: dict[str, object] = {"v": None, "stats_before": None}

    def reference(t, m, b, x, y, opt):
        if t % per_epoch % freq == 0 and t % per_epoch > 0:
            v = state["v"]
            if v is None:
                v = list(torch.split(start, [math.prod(s) for s in shapes]))
                v = [piece.view(s) for piece, s in zip(v, shapes, strict=True)]
            state["v"] = _ref_eigen_estimate(m, x, y, v)
        _ref_eigensam_step(m, b, x, y, state["v"], rho, alpha)

    refreshed: list[int] = []

    def after(t, opt):
        if "eig_estimate" in opt.diagnostics:
            refreshed.append(t)
            v_ref = torch.cat([piece.reshape(-1) for piece in state["v"]])
            torch.testing.assert_close(opt.eigenvector, v_ref, **TOL)

    _run("eigensam", reference, {"rho": rho, "alpha": alpha, "eig_every": freq},
         steps_per_epoch=per_epoch, after=after)
    assert refreshed == [2, 5]


def test_eigensam_estimate_sees_running_stats_from_before_the_batch():
    """Ours alone: at a refresh step the first forward is in eval mode and BatchNorm's running
    mean then is the one the previous step left (the batch has not been seen yet)."""
    model = bn_net()
    rec = Recorder(model)
    opt = build_optimizer("eigensam", model, lr=LR, eig_every=1, steps_per_epoch=10)
    batches = _batches()
    opt.step(BatchClosure(model, *batches[0]))
    left = model[1].running_mean.clone()
    rec.take()
    opt.step(BatchClosure(model, *batches[1]))
    calls = rec.take()
    assert [mode for mode, _ in calls] == [False, True, True]  # estimate, clean, perturbed
    assert torch.equal(calls[0][1], left)
    assert opt.diagnostics["eig_estimate"] == opt.eigenvalue
