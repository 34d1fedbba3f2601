"""``freeze_bn``: BatchNorm in eval mode while training, as DomainBed's ResNet."""

from __future__ import annotations

import torch
from torch import nn

from sharpness.train.batchnorm import freeze_batchnorm


def _net() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.LazyLinear(2))


def test_frozen_batchnorm_keeps_its_statistics_and_trains_its_weights():
    torch.manual_seed(0)
    net = _net()
    x = torch.randn(8, 3, 6, 6) * 3 + 2
    net(x)  # materialise the lazy layer
    bn = net[1]
    before = (bn.running_mean.clone(), bn.running_var.clone(), bn.weight.detach().clone())
    assert freeze_batchnorm(net) == 1
    net.train()  # the engine's call between passes: BatchNorm stays in eval mode
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
    assert not bn.training and net[0].training
    assert torch.equal(bn.running_mean, before[0]) and torch.equal(bn.running_var, before[1])
    assert not torch.equal(bn.weight.detach(), before[2])  # the affine weights still train
    free = _net()
    free(x)
    free.train()
    free(x)
    assert not torch.equal(free[1].running_mean, torch.zeros(4))  # unfrozen: statistics move


def test_freeze_bn_is_a_checked_config_option():
    import pytest

    from sharpness.errors import ConfigError
    from sharpness.train.config import validate_config

    base = {"dataset": "mnist", "model": "fcn"}
    assert validate_config(dict(base))["freeze_bn"] is False
    assert validate_config({**base, "freeze_bn": True})["freeze_bn"] is True
    with pytest.raises(ConfigError, match="freeze_bn"):
        validate_config({**base, "freeze_bn": "yes"})
