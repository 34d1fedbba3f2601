"""Helpers shared by the model builders: width scaling, activations and init scaling."""

from __future__ import annotations

import torch
from torch import nn


def scaled(channels: int, width: float, minimum: int = 1) -> int:
    """``channels`` times the width multiplier, rounded, at least ``minimum``.

    Every builder scales its channel counts through this one function, so ``width=0.25``
    means the same thing (a quarter of each layer) in every model.
    """
    if width <= 0:
        raise ValueError(f"width multiplier must be positive, got {width}")
    return max(minimum, int(round(channels * width)))


ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}


def activation(name: str) -> nn.Module:
    """A fresh activation module by name (``relu``, ``tanh``, ``gelu``)."""
    try:
        return ACTIVATIONS[name]()
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; known: {', '.join(ACTIVATIONS)}") \
            from None


@torch.no_grad()
def scale_init(module: nn.Module, alpha: float) -> nn.Module:
    """Multiply every weight and bias of ``module`` by ``alpha`` (the init scale).

    Normalisation layers (affine weights of BatchNorm/LayerNorm/GroupNorm) are left alone:
    the init-scale studies of the papers scale the linear maps, not the normaliser's gain.
    """
    if alpha == 1.0:
        return module
    norm_types = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)
    for sub in module.modules():
        if isinstance(sub, norm_types):
            continue
        for name, param in sub.named_parameters(recurse=False):
            if name in ("weight", "bias"):
                param.mul_(alpha)
    return module


class GlobalAvgPool(nn.Module):
    """Global average pooling as a mean (shape ``N, C, 1, 1``).

    Same numbers as ``nn.AdaptiveAvgPool2d(1)``, but its backward is an expand, which is
    deterministic on CUDA, while adaptive pooling's CUDA backward is not (PyTorch flags it
    under ``torch.use_deterministic_algorithms``).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Mean over the spatial dimensions, kept as 1x1."""
        return x.mean(dim=(2, 3), keepdim=True)
