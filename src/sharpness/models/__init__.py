"""Model zoo: every network the three papers train, behind one ``build_model`` call.

>>> model = build_model("resnet18", num_classes=10, in_channels=3, image_size=32, width=0.25)

Each builder takes ``(num_classes, in_channels, image_size, width=1.0, **kw)``; ``width``
multiplies every channel/hidden count so the quick profile can shrink a model without changing
its shape. Extra keyword arguments are model-specific (``depth``, ``activation``, ``alpha``,
``parametrization``, ``pretrained``, ...); an unknown one is a ``ValueError`` naming it.

Importing this package imports no torch: the names (:data:`MODELS`) and each model's options
(:func:`model_options`, read from its builder's signature in the source) are known without
building anything, so the workflow's plan checks a config's ``model`` and ``model_kwargs``
before any job starts (:func:`model_problem`); a builder's module is imported when it is first
looked up.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sharpness.errors import lookup
from sharpness.lazy import lazy_attribute

if TYPE_CHECKING:
    from torch import nn

ModelBuilder = Callable[..., "nn.Module"]

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
    return lazy_attribute(__name__, _HOMES, globals(), name)


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


#: config name -> the name of its builder (a function of :data:`_HOMES`)
_BUILDER_NAMES = {
    "resnet18": "resnet18_cifar",
    "wrn28_10": "wrn28_10",
    "pyramidnet110": "pyramidnet110",
    "resnet50": "resnet50",
    "resnet101": "resnet101",
    "vit_b_16": "vit_b_16",
    "vit_small": "vit_small",
    "cnn": "cnn",
    "fcn": "fcn",
}
#: name -> builder; the names the configs use
MODELS: Mapping[str, ModelBuilder] = _Builders(_BUILDER_NAMES)

_FIXED = ("num_classes", "in_channels", "image_size", "width")


def model_options(name: str) -> dict[str, Any]:
    """The model-specific keyword arguments of ``name`` and their defaults (a ``ValueError``
    naming the known models for an unknown name). Read from the builder's signature in its
    module's source, without importing it (no torch); every default is a literal, and
    ``tests/models/test_models.py`` holds the answer against the imported signature."""
    return dict(_declared_options(lookup(_BUILDER_NAMES, name, "model")))


@functools.cache
def _declared_options(builder: str) -> dict[str, Any]:
    spec = importlib.util.find_spec(f"{__name__}.{_HOMES[builder]}")
    assert spec is not None and spec.origin is not None, builder
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == builder]
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = [*zip(positional, defaults, strict=True),
             *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return {arg.arg: ast.literal_eval(default) for arg, default in pairs
            if arg.arg not in _FIXED and default is not None}


def model_problem(name: Any, options: Any) -> tuple[str, str] | None:
    """The config key at fault (``model`` or ``model_kwargs``) and why, when model ``name``
    cannot be built with the options ``options`` (a config's ``model`` and ``model_kwargs``):
    an unknown model, or options it does not take, naming what it knows; ``None`` when it
    can. Torch-free: the plan asks it for every run and setting before any job starts, a
    run's validation asks it again."""
    if name not in _BUILDER_NAMES:
        return "model", f"unknown model {name!r}; known: {', '.join(sorted(_BUILDER_NAMES))}"
    allowed = model_options(name)
    bad = sorted(set(options or {}) - set(allowed))
    if bad:
        return "model_kwargs", (f"model {name!r} has no option(s) {', '.join(bad)}; "
                                f"accepted: {', '.join(sorted(allowed)) or 'none'}")
    return None


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
    found = model_problem(name, kw)
    if found:
        raise ValueError(found[1])
    builder = _builder(name)
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
