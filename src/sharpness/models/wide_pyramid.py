"""WideResNet-28-10 and PyramidNet-110 (alpha=270), the CIFAR backbones of the SAM papers.

torchvision has neither, so they are written here from the papers' definitions:

* WideResNet (Zagoruyko & Komodakis 2016): a 3x3 stem of 16 channels, three groups of
  ``(depth-4)/6`` pre-activation basic blocks of widths 16k, 32k, 64k (k = widen factor),
  1x1-conv shortcuts where the shape changes, then BN-ReLU, global pooling, linear.
  WRN-28-10 has 36.5M parameters.
* PyramidNet (Han, Kim & Kim 2017), basic-block form: ``(depth-2)/6`` blocks a stage, the
  width rising additively by ``alpha / (3 n)`` a block from 16 to ``16 + alpha``; blocks are
  BN-conv-BN-ReLU-conv-BN, shortcuts are (average-pooled) identities zero-padded to the new
  width. PyramidNet-110 with alpha=270 has 28.5M parameters here (the paper lists 28.3M;
  rounding of the per-block widths differs between implementations).

The width multiplier scales every channel count (and alpha), so quick profiles can shrink them.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from sharpness.models.common import scaled


def _kaiming_convs(net: nn.Module) -> None:
    """He (fan-out) initialisation of every convolution, as both official codes do."""
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


class WideBasic(nn.Module):
    """Pre-activation basic block of a WideResNet (BN-ReLU-conv, twice, optional dropout)."""

    def __init__(self, in_planes: int, planes: int, stride: int, dropout: float) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        """Residual branch plus shortcut (taken from the pre-activated input)."""
        out = F.relu(self.bn1(x))
        shortcut = x if isinstance(self.shortcut, nn.Identity) else self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(self.dropout(F.relu(self.bn2(out))))
        return out + shortcut


class WideResNet(nn.Module):
    """WideResNet-depth-k for small images."""

    def __init__(self, depth: int, widen: float, num_classes: int, in_channels: int = 3,
                 width: float = 1.0, dropout: float = 0.0) -> None:
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"WideResNet depth must be 6n+4, got {depth}")
        n = (depth - 4) // 6
        widths = [scaled(16, width), *(scaled(16 * s * widen, width) for s in (1, 2, 4))]
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=False)
        layers: list[nn.Module] = []
        in_planes = widths[0]
        for stage, planes in enumerate(widths[1:]):
            for i in range(n):
                stride = 2 if (stage > 0 and i == 0) else 1
                layers.append(WideBasic(in_planes, planes, stride, dropout))
                in_planes = planes
        self.blocks = nn.Sequential(*layers)
        self.bn = nn.BatchNorm2d(in_planes)
        self.fc = nn.Linear(in_planes, num_classes)
        _kaiming_convs(self)
        nn.init.zeros_(self.fc.bias)

    @property
    def gradcam_layer(self) -> nn.Module:
        """The last residual block (Grad-CAM target)."""
        return self.blocks[-1]

    def forward(self, x: Tensor) -> Tensor:
        """Logits of a batch of images."""
        out = F.relu(self.bn(self.blocks(self.conv1(x))))
        return self.fc(out.mean(dim=(2, 3)))


class PyramidBasic(nn.Module):
    """PyramidNet basic block: BN-conv-BN-ReLU-conv-BN, zero-padded identity shortcut."""

    def __init__(self, in_planes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes)
        self.stride = stride
        self.extra = planes - in_planes

    def forward(self, x: Tensor) -> Tensor:
        """Residual branch plus the (pooled, zero-padded) input."""
        out = self.conv1(self.bn1(x))
        out = self.bn3(self.conv2(F.relu(self.bn2(out))))
        shortcut = F.avg_pool2d(x, 2, ceil_mode=True) if self.stride != 1 else x
        if self.extra > 0:
            shortcut = F.pad(shortcut, (0, 0, 0, 0, 0, self.extra))
        return out + shortcut


class PyramidNet(nn.Module):
    """Additive PyramidNet with basic blocks for small images."""

    def __init__(self, depth: int, alpha: float, num_classes: int, in_channels: int = 3,
                 width: float = 1.0) -> None:
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"PyramidNet (basic) depth must be 6n+2, got {depth}")
        n = (depth - 2) // 6
        start = scaled(16, width)
        add = alpha * width / (3 * n)
        self.conv1 = nn.Conv2d(in_channels, start, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(start)
        layers: list[nn.Module] = []
        exact = float(start)
        in_planes = start
        for stage in range(3):
            for i in range(n):
                exact += add
                planes = int(round(exact))
                stride = 2 if (stage > 0 and i == 0) else 1
                layers.append(PyramidBasic(in_planes, planes, stride))
                in_planes = planes
        self.blocks = nn.Sequential(*layers)
        self.bn_final = nn.BatchNorm2d(in_planes)
        self.fc = nn.Linear(in_planes, num_classes)
        _kaiming_convs(self)

    @property
    def gradcam_layer(self) -> nn.Module:
        """The last residual block (Grad-CAM target)."""
        return self.blocks[-1]

    def forward(self, x: Tensor) -> Tensor:
        """Logits of a batch of images."""
        out = self.blocks(self.bn1(self.conv1(x)))
        out = F.relu(self.bn_final(out))
        return self.fc(out.mean(dim=(2, 3)))


def wrn28_10(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
             depth: int = 28, widen: float = 10, dropout: float = 0.0) -> WideResNet:
    """WideResNet-28-10 (``depth``/``widen`` overridable for ablations)."""
    del image_size
    return WideResNet(depth, widen, num_classes, in_channels, width, dropout)


def pyramidnet110(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
                  depth: int = 110, alpha: float = 270) -> PyramidNet:
    """PyramidNet-110, alpha=270 (``depth``/``alpha`` overridable for quick runs)."""
    del image_size
    return PyramidNet(depth, alpha, num_classes, in_channels, width)
