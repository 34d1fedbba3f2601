"""ViT-B/16 fine-tunes at its pre-training resolution (inputs resized inside the model), and a
pretrained ResNet-50 (DomainBed's backbone) refuses settings its weights cannot fit."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from sharpness.models import build_model
from sharpness.models.vit import ResizedViT


def test_vit_resizes_cifar_inputs_to_its_patch_grid():
    torch.manual_seed(0)
    model = build_model("vit_b_16", num_classes=10, in_channels=3, image_size=32, width=0.05,
                        resize_to=224)
    assert isinstance(model, ResizedViT) and model.image_size == 224
    assert model.encoder.pos_embedding.shape[1] == 14 * 14 + 1  # 14 x 14 patches + class
    x = torch.rand(2, 3, 32, 32)
    big = F.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(x), model(big))  # the same as resizing outside


def test_pretrained_resnet50_needs_the_imagenet_stem_and_width_one():
    with pytest.raises(ValueError, match="ImageNet stem"):
        build_model("resnet50", num_classes=7, in_channels=3, image_size=32, pretrained=True)
    with pytest.raises(ValueError, match="width=1.0"):
        build_model("resnet50", num_classes=7, in_channels=3, image_size=224, width=0.5,
                    pretrained=True)
