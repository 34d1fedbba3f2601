"""Behaviour shared by every optimizer: BatchNorm statistics, determinism, exact resume."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from sharpness.optim import OPTIMIZERS, BatchClosure, build_optimizer

TWO_PASS = [name for name in OPTIMIZERS if name != "sgd"]
HPARAMS = {"eigensam": {"eig_every": 2, "power_iters": 3}, "esam": {"beta": 0.5, "gamma": 0.5}}


def _net(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Linear(16, 3),
    )


def _batches(n: int = 4, seed: int = 1):
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(8, 3, 6, 6, generator=gen), torch.randint(0, 3, (8,), generator=gen))
        for _ in range(n)
    ]


def _make(name: str, model: nn.Module, seed: int = 0):
    return build_optimizer(
        name,
        model,
        lr=0.05,
        momentum=0.9,
        weight_decay=5e-4,
        total_steps=8,
        seed=seed,
        **HPARAMS.get(name, {}),
    )


@pytest.mark.parametrize("name", TWO_PASS)
def test_batchnorm_stats_updated_by_clean_pass_only(name):
    """With bn_second_pass='freeze' only the clean pass moves the running statistics."""
    model = _net()
    x, y = _batches(1)[0]
    reference = copy.deepcopy(model)
    reference.train()
    with torch.no_grad():
        reference(x)  # exactly one clean forward pass in train mode
    opt = build_optimizer(name, model, lr=0.05, total_steps=8,
                          **{**HPARAMS.get(name, {}), "bn_second_pass": "freeze"})
    opt.step(BatchClosure(model, x, y))
    bn, ref_bn = model[1], reference[1]
    assert int(bn.num_batches_tracked) == 1
    torch.testing.assert_close(bn.running_mean, ref_bn.running_mean, rtol=0, atol=0)
    torch.testing.assert_close(bn.running_var, ref_bn.running_var, rtol=0, atol=0)
    assert bn.track_running_stats  # the freeze was undone


def _train(name: str, seed: int, steps_batches):
    model = _net()
    opt = _make(name, model, seed=seed)
    for x, y in steps_batches:
        opt.step(BatchClosure(model, x, y))
    return model, opt


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_steps_deterministic_given_seed(name):
    batches = _batches()
    a, _ = _train(name, 3, batches)
    b, _ = _train(name, 3, batches)
    for (ka, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(va, vb), (name, ka)


def test_esam_seed_matters():
    batches = _batches()
    a, _ = _train("esam", 3, batches)
    b, _ = _train("esam", 4, batches)
    assert any(not torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_state_dict_round_trip_continues_bit_identically(name):
    batches = _batches(6)
    model = _net()
    opt = _make(name, model, seed=7)
    for x, y in batches[:3]:
        opt.step(BatchClosure(model, x, y))
    saved_model = copy.deepcopy(model.state_dict())
    saved_opt = copy.deepcopy(opt.state_dict())
    for x, y in batches[3:]:
        opt.step(BatchClosure(model, x, y))
    # resume in fresh objects (different construction seed: the checkpoint must win)
    resumed = _net(seed=99)
    resumed.load_state_dict(saved_model)
    opt2 = _make(name, resumed, seed=123)
    opt2.load_state_dict(saved_opt)
    for x, y in batches[3:]:
        opt2.step(BatchClosure(resumed, x, y))
    for (k, va), (_, vb) in zip(
        model.state_dict().items(), resumed.state_dict().items(), strict=True
    ):
        assert torch.equal(va, vb), (name, k)
    assert opt2.diagnostics == opt.diagnostics


def test_unknown_names_are_rejected():
    model = _net()
    with pytest.raises(ValueError, match="rhoo"):
        build_optimizer("sam", model, rhoo=0.1)
    with pytest.raises(ValueError, match="unknown optimizer 'adamw'"):
        build_optimizer("adamw", model)
    with pytest.raises(ValueError, match="rho"):
        build_optimizer("sgd", model, rho=0.1)
    opt = _make("sam", model)
    with pytest.raises(ValueError, match="'sam'"):
        _make("fsam", model).load_state_dict(opt.state_dict())


def test_lr_scheduler_and_explicit_steps():
    model = _net()
    x, y = _batches(1)[0]
    opt = _make("sam", model)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    closure = BatchClosure(model, x, y)
    loss = opt.step(closure)
    sched.step()
    assert opt.base_optimizer.param_groups[0]["lr"] == pytest.approx(
        0.05 * 0.5 * (1 + 0.7071067811865476)
    )
    assert float(loss) == pytest.approx(opt.diagnostics["loss"])
    assert closure.clean_outputs is not None and closure.clean_outputs.shape == (8, 3)
    # explicit first/second step as in davda54/sam
    before = [p.detach().clone() for p in model.parameters()]
    nn.functional.cross_entropy(model(x), y).backward()
    opt.first_step(zero_grad=True)
    assert any(not torch.equal(p, q) for p, q in zip(model.parameters(), before, strict=True))
    nn.functional.cross_entropy(model(x), y).backward()
    opt.second_step(zero_grad=True)
    assert opt.step_count == 2
