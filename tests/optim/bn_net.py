"""The float64 BatchNorm CNN the step-by-step comparisons with official code run on, and the
global gradient norm those codes compute."""

from __future__ import annotations

import torch
from torch import nn


def bn_net(seed: int = 0) -> nn.Module:
    """Conv, BatchNorm, ReLU, linear on 2×5×5 inputs, 4 classes, in float64."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(27, 4)).double()


def global_norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The L2 norm over every tensor, as the official codes stack the per-tensor norms."""
    return torch.norm(torch.stack([t.norm(p=2) for t in tensors]), p=2)
