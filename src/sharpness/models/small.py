"""Small CNNs and fully connected networks for the `eos` and `minorfirst` items.

Both take the activation (``relu``/``tanh``), width, depth and init scale ``alpha`` as
parameters, since the `eos` ablations vary exactly these and the `minorfirst` Grad-CAM study
varies the init scale.

Initialisation (both): weights of input/hidden layers ~ N(0, gain^2 / fan_in) with the
activation's gain (sqrt 2 for ReLU, 5/3 for tanh), the output layer ~ N(0, 1 / fan_in), biases
zero; then everything is multiplied by ``alpha``. A fixed, explicit rule (not PyTorch's
default uniform init) so that the init scale means the same in every model.

**muP option of the FCN** (``parametrization="mup"``). The maximal-update parametrisation of
Yang & Hu (Tensor Programs IV/V; TP-V Table 3, SGD column), written in *multiplier form*
relative to a base width ``n0`` (the hidden width at ``width=1``) so that one plain SGD/GD
learning rate transfers across widths. With ``m = n / n0`` and ``W = c * w`` (``w`` the
trained parameter, ``c`` a fixed multiplier; SGD on ``w`` then moves ``W`` with effective
learning rate ``lr * c^2``):

=============  =====================  ========================  =====================
layer          multiplier ``c``       init of ``w``             effective on ``W``
=============  =====================  ========================  =====================
input weight   ``sqrt(m)``            N(0, g^2/(fan_in m))      var g^2/fan_in, lr*m
hidden weight  ``1``                  N(0, g^2/fan_in)          var g^2/fan_in, lr
output weight  ``1/sqrt(m)``          N(0, 1/fan_in)            var 1/(fan_in m), lr/m
input/hidden   ``sqrt(m)``            0                         lr*m
biases
output bias    ``1``                  0                         lr
=============  =====================  ========================  =====================

which is TP-V's "init var 1/fan_in, LR eta*fan_out" for input weights and biases, "1/fan_in,
eta" for hidden weights and "1/fan_in^2, eta/fan_in" for output weights, up to constants
fixed at the base width. At ``m = 1`` muP and the standard parametrisation are the same
network (same seed, same numbers). The Hessian that sharpness measures is the Hessian in the
trained parameters ``w``, the quantity GD's stability depends on.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sharpness.models.common import activation as make_activation
from sharpness.models.common import scaled


def _gain(name: str) -> float:
    """Init gain of an activation (torch's values; 1 for others such as GELU)."""
    return nn.init.calculate_gain(name) if name in ("relu", "tanh") else 1.0


class ScaledLinear(nn.Linear):
    """A linear layer computing ``x (c_w w)^T + c_b b`` with fixed multipliers (muP form)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 weight_mult: float = 1.0, bias_mult: float = 1.0) -> None:
        super().__init__(in_features, out_features, bias=bias)
        self.weight_mult = weight_mult
        self.bias_mult = bias_mult

    def forward(self, x: Tensor) -> Tensor:
        """Affine map with the multipliers applied."""
        w = self.weight if self.weight_mult == 1.0 else self.weight * self.weight_mult
        b = self.bias
        if b is not None and self.bias_mult != 1.0:
            b = b * self.bias_mult
        return F.linear(x, w, b)

    def extra_repr(self) -> str:
        """Shape plus the multipliers."""
        return f"{super().extra_repr()}, weight_mult={self.weight_mult:g}, " \
               f"bias_mult={self.bias_mult:g}"


class FCN(nn.Module):
    """Fully connected network: flatten, ``depth`` hidden layers of width ``n``, linear head."""

    def __init__(self, in_features: int, num_classes: int, hidden: int, depth: int,
                 act: str = "relu", alpha: float = 1.0, bias: bool = True,
                 parametrization: str = "sp", base_hidden: int | None = None) -> None:
        super().__init__()
        if depth < 1:
            raise ValueError(f"FCN depth (hidden layers) must be >= 1, got {depth}")
        if parametrization not in ("sp", "mup"):
            raise ValueError(f"parametrization must be 'sp' or 'mup', got {parametrization!r}")
        m = hidden / (base_hidden or hidden) if parametrization == "mup" else 1.0
        self.width_ratio = m
        self.parametrization = parametrization
        gain = _gain(act)
        layers: list[nn.Module] = []
        fan_in = in_features
        for i in range(depth):
            first = i == 0
            lin = ScaledLinear(fan_in, hidden, bias, weight_mult=math.sqrt(m) if first else 1.0,
                               bias_mult=math.sqrt(m))
            var = gain**2 / fan_in / (m if first else 1.0)
            _init(lin, alpha * math.sqrt(var))
            layers += [lin, make_activation(act)]
            fan_in = hidden
        head = ScaledLinear(fan_in, num_classes, bias, weight_mult=1.0 / math.sqrt(m))
        _init(head, alpha / math.sqrt(fan_in))
        layers.append(head)
        self.net = nn.Sequential(nn.Flatten(), *layers)

    def forward(self, x: Tensor) -> Tensor:
        """Logits (or regression outputs) of a batch."""
        return self.net(x)


def _init(layer: nn.Linear | nn.Conv2d, std: float) -> None:
    with torch.no_grad():
        layer.weight.normal_(0.0, std)
        if layer.bias is not None:
            layer.bias.zero_()


class SmallCNN(nn.Module):
    """``depth`` blocks of 3x3 conv + activation (+ 2x2 max-pool), then a linear head.

    The head reads the flattened feature map (``head="flatten"``, the classic small CNN of
    the EoS literature) or its global average (``head="gap"``). ``gradcam_layer`` is the last
    block, whose output maps Grad-CAM weights.
    """

    def __init__(self, in_channels: int, num_classes: int, image_size: int, channels: int,
                 depth: int, act: str = "relu", alpha: float = 1.0, pool: bool = True,
                 head: str = "flatten", bias: bool = True) -> None:
        super().__init__()
        if depth < 1:
            raise ValueError(f"CNN depth must be >= 1, got {depth}")
        if head not in ("flatten", "gap"):
            raise ValueError(f"head must be 'flatten' or 'gap', got {head!r}")
        gain = _gain(act)
        blocks: list[nn.Module] = []
        c_in, size = in_channels, image_size
        for _ in range(depth):
            conv = nn.Conv2d(c_in, channels, 3, padding=1, bias=bias)
            _init(conv, alpha * gain / math.sqrt(c_in * 9))
            parts: list[nn.Module] = [conv, make_activation(act)]
            if pool and size >= 4:
                parts.append(nn.MaxPool2d(2))
                size //= 2
            blocks.append(nn.Sequential(*parts))
            c_in = channels
        self.features = nn.Sequential(*blocks)
        self.head_kind = head
        feat = channels * size * size if head == "flatten" else channels
        self.fc = nn.Linear(feat, num_classes, bias=bias)
        _init(self.fc, alpha / math.sqrt(feat))

    @property
    def gradcam_layer(self) -> nn.Module:
        """The last conv block (Grad-CAM target)."""
        return self.features[-1]

    def forward(self, x: Tensor) -> Tensor:
        """Logits of a batch of images."""
        h = self.features(x)
        h = torch.flatten(h, 1) if self.head_kind == "flatten" else h.mean(dim=(2, 3))
        return self.fc(h)


def fcn(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
        hidden: int = 200, depth: int = 2, activation: str = "relu", alpha: float = 1.0,
        bias: bool = True, parametrization: str = "sp",
        base_hidden: int | None = None) -> FCN:
    """FCN with ``depth`` hidden layers of ``hidden * width`` units (muP base: ``hidden``)."""
    n = scaled(hidden, width)
    return FCN(in_channels * image_size * image_size, num_classes, n, depth, activation, alpha,
               bias, parametrization, base_hidden if base_hidden is not None else hidden)


def cnn(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
        channels: int = 32, depth: int = 2, activation: str = "relu", alpha: float = 1.0,
        pool: bool = True, head: str = "flatten", bias: bool = True) -> SmallCNN:
    """Small CNN with ``depth`` conv blocks of ``channels * width`` channels."""
    return SmallCNN(in_channels, num_classes, image_size, scaled(channels, width), depth,
                    activation, alpha, pool, head, bias)
