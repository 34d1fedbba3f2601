"""ResNets built from torchvision's blocks: CIFAR-style ResNet-18 and ResNet-50/101.

:class:`ScaledResNet` reuses ``torchvision.models.resnet.ResNet`` (its ``_make_layer`` and
``forward``) and only changes two things: every stage width is multiplied by ``width``, and
with ``small_input=True`` the ImageNet stem (7x7 stride-2 conv + max-pool) becomes the CIFAR
stem (3x3 stride-1 conv, no pool), as in the CIFAR ResNet-18 of the SAM literature. At
``width=1`` and ``small_input=False`` the module tree (and the state-dict keys) are exactly
torchvision's ``resnet50``/``resnet101``, so torchvision weights load into it.
"""

from __future__ import annotations

from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

from sharpness.models.common import GlobalAvgPool, scaled
from sharpness.models.pretrained import load_pinned

STAGE_PLANES = (64, 128, 256, 512)


class ScaledResNet(ResNet):
    """torchvision's ResNet with a width multiplier and an optional small-image stem."""

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int],
                 num_classes: int, in_channels: int = 3, width: float = 1.0,
                 small_input: bool = True, zero_init_residual: bool = False) -> None:
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        planes = [scaled(p, width) for p in STAGE_PLANES]
        self.inplanes = planes[0]
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        if small_input:
            self.conv1 = nn.Conv2d(in_channels, planes[0], 3, stride=1, padding=1, bias=False)
            self.maxpool = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(in_channels, planes[0], 7, stride=2, padding=3, bias=False)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(planes[0])
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(block, planes[0], layers[0])
        self.layer2 = self._make_layer(block, planes[1], layers[1], stride=2)
        self.layer3 = self._make_layer(block, planes[2], layers[2], stride=2)
        self.layer4 = self._make_layer(block, planes[3], layers[3], stride=2)
        self.avgpool = GlobalAvgPool()  # = AdaptiveAvgPool2d(1), deterministic on CUDA
        self.fc = nn.Linear(planes[3] * block.expansion, num_classes)
        # torchvision's init (kaiming-normal convs, unit BN), done by the same rules
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d | nn.GroupNorm):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    @property
    def gradcam_layer(self) -> nn.Module:
        """The last convolutional stage (the usual Grad-CAM target)."""
        return self.layer4


def resnet18_cifar(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
                   small_input: bool = True) -> ScaledResNet:
    """CIFAR-style ResNet-18 (3x3 stem, no max-pool; 11.2M parameters at width 1)."""
    del image_size  # global average pooling: any size
    return ScaledResNet(BasicBlock, [2, 2, 2, 2], num_classes, in_channels, width, small_input)


def resnet50(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
             small_input: bool | None = None, pretrained: bool = False) -> ScaledResNet:
    """torchvision ResNet-50; ``small_input`` defaults to ``image_size < 64`` (CIFAR stem).

    ``pretrained``: torchvision's ImageNet weights (``IMAGENET1K_V1``, DomainBed's backbone)
    with a fresh ``num_classes`` head; needs width 1, 3 channels and the ImageNet stem. The
    file is loaded only after its whole SHA-256 matches the pin
    (:func:`sharpness.models.pretrained.load_pinned`, ``weights_only=True``); a cached file that
    does not match raises ``PretrainedWeightsRefused``, and offline without the file it raises
    ``PretrainedWeightsUnavailable``."""
    small = image_size < 64 if small_input is None else small_input
    model = ScaledResNet(Bottleneck, [3, 4, 6, 3], num_classes, in_channels, width, small)
    if pretrained:
        if width != 1.0 or in_channels != 3 or small:
            raise ValueError("pretrained ResNet-50 needs width=1.0, 3 channels and the "
                             "ImageNet stem (image_size >= 64)")
        _load_imagenet_weights(model)
    return model


def _load_imagenet_weights(model: ScaledResNet) -> None:
    # never torchvision's get_state_dict: it unpickles a cached file without weights_only
    state = load_pinned("ResNet50_Weights.IMAGENET1K_V1")
    state = {k: v for k, v in state.items() if not k.startswith("fc.")}  # a fresh head
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or set(missing) != {"fc.weight", "fc.bias"}:
        raise ValueError(f"ResNet-50 weights do not fit: missing {missing}, unexpected "
                         f"{unexpected}")


def resnet101(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
              small_input: bool | None = None) -> ScaledResNet:
    """torchvision ResNet-101; ``small_input`` defaults to ``image_size < 64``."""
    small = image_size < 64 if small_input is None else small_input
    return ScaledResNet(Bottleneck, [3, 4, 23, 3], num_classes, in_channels, width, small)
