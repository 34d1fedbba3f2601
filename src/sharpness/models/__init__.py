"""Model zoo: every network the three papers train, behind one ``build_model`` call.

>>> model = build_model("resnet18", num_classes=10, in_channels=3, image_size=32, width=0.25)

Each builder takes ``(num_classes, in_channels, image_size, width=1.0, **kw)``; ``width``
multiplies every channel/hidden count so the quick profile can shrink a model without changing
its shape. Extra keyword arguments are model-specific (``depth``, ``activation``, ``alpha``,
``parametrization``, ``pretrained``, ...); an unknown one is a ``ValueError`` naming it.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from torch import nn

from sharpness.errors import lookup

ModelBuilder = Callable[..., nn.Module]

#: where each public name lives (module in this package); imported on first use, so a job
#: that trains a CNN or FCN never imports torchvision (its import pulls torch._dynamo: about
#: 1.5 CPU-s per process, paid by every training job of a profile)
_HOMES: dict[str, str] = {
    "ScaledResNet": "resnets", "resnet18_cifar": "resnets", "resnet50": "resnets",
    "resnet101": "resnets",
    "FCN": "small", "ScaledLinear": "small", "SmallCNN": "small", "cnn": "small", "fcn": "small",
    "PretrainedWeightsUnavailable": "pretrained", "PretrainedWeightsRefused": "pretrained",
    "vit_b_16": "vit", "vit_small": "vit",
    "PyramidNet": "wide_pyramid", "WideResNet": "wide_pyramid", "pyramidnet110": "wide_pyramid",
    "wrn28_10": "wide_pyramid",
}


def __getattr__(name: str) -> Any:
    """The model classes and builders, each imported from its module when first asked for."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


class _Builders(Mapping[str, ModelBuilder]):
    """Config name -> builder, importing a builder's module only when it is looked up."""

    def __init__(self, names: dict[str, str]) -> None:
        self._names = names

    def __getitem__(self, key: str) -> ModelBuilder:
        builder: ModelBuilder = __getattr__(self._names[key])
        return builder

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


#: name -> builder; the names the configs use
MODELS: Mapping[str, ModelBuilder] = _Builders({
    "resnet18": "resnet18_cifar",
    "wrn28_10": "wrn28_10",
    "pyramidnet110": "pyramidnet110",
    "resnet50": "resnet50",
    "resnet101": "resnet101",
    "vit_b_16": "vit_b_16",
    "vit_small": "vit_small",
    "cnn": "cnn",
    "fcn": "fcn",
})

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
    "FCN", "MODELS", "PretrainedWeightsRefused", "PretrainedWeightsUnavailable", "PyramidNet",
    "ScaledLinear",
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
