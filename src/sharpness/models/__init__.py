"""Model zoo: every network the three papers train, behind one ``build_model`` call.

>>> model = build_model("resnet18", num_classes=10, in_channels=3, image_size=32, width=0.25)

Each builder takes ``(num_classes, in_channels, image_size, width=1.0, **kw)``; ``width``
multiplies every channel/hidden count so the quick profile can shrink a model without changing
its shape. Extra keyword arguments are model-specific (``depth``, ``activation``, ``alpha``,
``parametrization``, ``pretrained``, ...); an unknown one is a ``ValueError`` naming it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from torch import nn

from sharpness.errors import lookup
from sharpness.models.resnets import ScaledResNet, resnet18_cifar, resnet50, resnet101
from sharpness.models.small import FCN, ScaledLinear, SmallCNN, cnn, fcn
from sharpness.models.vit import PretrainedWeightsUnavailable, vit_b_16, vit_small
from sharpness.models.wide_pyramid import PyramidNet, WideResNet, pyramidnet110, wrn28_10

ModelBuilder = Callable[..., nn.Module]

#: name -> builder; the names the configs use
MODELS: dict[str, ModelBuilder] = {
    "resnet18": resnet18_cifar,
    "wrn28_10": wrn28_10,
    "pyramidnet110": pyramidnet110,
    "resnet50": resnet50,
    "resnet101": resnet101,
    "vit_b_16": vit_b_16,
    "vit_small": vit_small,
    "cnn": cnn,
    "fcn": fcn,
}

_FIXED = ("num_classes", "in_channels", "image_size", "width")


def model_options(name: str) -> dict[str, Any]:
    """The model-specific keyword arguments of ``name`` and their defaults."""
    builder = _builder(name)
    return {k: p.default for k, p in inspect.signature(builder).parameters.items()
            if k not in _FIXED}


def _builder(name: str) -> ModelBuilder:
    return lookup(MODELS, name, "model")


def build_model(name: str, num_classes: int, in_channels: int, image_size: int,
                width: float = 1.0, **kw: Any) -> nn.Module:
    """Build model ``name`` for ``num_classes`` outputs and ``in_channels x image_size^2``
    inputs, with every width multiplied by ``width``.

    Raises ``ValueError`` for an unknown model (listing the known ones) or an unknown
    keyword (listing the accepted ones). Use ``torch.manual_seed`` before the call for a
    reproducible init.
    """
    builder = _builder(name)
    allowed = model_options(name)
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise ValueError(f"model {name!r} got unknown option(s) {', '.join(unknown)}; "
                         f"accepted: {', '.join(sorted(allowed)) or 'none'}")
    if width <= 0:
        raise ValueError(f"width multiplier must be positive, got {width}")
    return builder(num_classes, in_channels, image_size, width=width, **kw)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = [
    "FCN", "MODELS", "PretrainedWeightsUnavailable", "PyramidNet", "ScaledLinear",
    "ScaledResNet", "SmallCNN", "WideResNet", "build_model", "cnn", "count_parameters", "fcn",
    "QUICK_SETTINGS", "model_options", "pyramidnet110", "resnet18_cifar", "resnet50", "resnet101", "vit_b_16",
    "vit_small", "wrn28_10",
]


#: Suggested quick-profile settings (CPU, minutes): full depth where it is cheap, reduced
#: width; the deep CIFAR nets also get fewer blocks. The benchmark and tests use these; a
#: config may choose others.
QUICK_SETTINGS: dict[str, dict[str, Any]] = {
    "resnet18": {"width": 0.25},
    "wrn28_10": {"width": 0.1, "depth": 16},
    "pyramidnet110": {"width": 0.25, "depth": 20, "alpha": 48},
    "resnet50": {"width": 0.125},
    "resnet101": {"width": 0.125},
    "vit_b_16": {"width": 0.125},
    "vit_small": {"width": 0.5},
    "cnn": {"width": 1.0},
    "fcn": {"width": 1.0},
}
