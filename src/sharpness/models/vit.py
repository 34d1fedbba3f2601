"""Vision transformers from torchvision: ViT-B/16 and a small ViT for 32x32 images.

Both are ``torchvision.models.VisionTransformer``. ViT-B/16 can load torchvision's
ImageNet weights (``pretrained=True``), loaded only after the file's whole SHA-256 matches the
pin (:func:`sharpness.models.pretrained.load_pinned`, ``weights_only=True``); a cached file that
does not match raises :class:`PretrainedWeightsRefused`, and offline, when the weight file is
not already in the torch hub cache, :class:`PretrainedWeightsUnavailable` says which file to
place where. With pretrained weights the classification head is replaced by a fresh one with
``num_classes`` outputs and the position embeddings are interpolated to ``image_size``
(torchvision's own helper), as is usual for fine-tuning. ``resize_to`` (e.g. 224) instead
fine-tunes at the pre-training resolution: every input is resized (bilinear) to
``resize_to x resize_to`` inside the model, so CIFAR's 32x32 images meet ViT-B/16 as a 14x14
patch grid, not a 2x2 one.
"""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn import functional as F
from torchvision.models.vision_transformer import VisionTransformer, interpolate_embeddings

from sharpness.models.common import scaled
from sharpness.models.pretrained import (
    PretrainedWeightsRefused,
    PretrainedWeightsUnavailable,
    load_pinned,
)

__all__ = ["PretrainedWeightsRefused", "PretrainedWeightsUnavailable", "ResizedViT", "vit_b_16",
           "vit_small"]


def _heads_dim(hidden: int, heads: int) -> int:
    """Round ``hidden`` to a multiple of ``heads`` (multi-head attention needs it)."""
    return max(heads, int(round(hidden / heads)) * heads)


class ResizedViT(VisionTransformer):
    """A ViT whose inputs are resized (bilinear) to its ``image_size`` first."""

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.image_size or x.shape[-2] != self.image_size:
            x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear",
                              align_corners=False)
        return super().forward(x)


def vit_b_16(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
             pretrained: bool = False, patch_size: int = 16,
             resize_to: int | None = None) -> VisionTransformer:
    """ViT-B/16 (12 layers, 12 heads, hidden 768, MLP 3072; width scales hidden and MLP);
    ``resize_to``: the resolution the model resizes every input to (see the module doc)."""
    if in_channels != 3:
        raise ValueError("vit_b_16 expects 3-channel images")
    cls = VisionTransformer
    if resize_to is not None:
        image_size, cls = int(resize_to), ResizedViT
    if image_size % patch_size:
        raise ValueError(f"image_size {image_size} is not a multiple of patch {patch_size}")
    if pretrained:
        if width != 1.0 or patch_size != 16:
            raise ValueError("pretrained ViT-B/16 needs width=1.0 and patch_size=16")
        return _pretrained_vit_b_16(num_classes, image_size, cls)
    hidden = _heads_dim(scaled(768, width), 12)
    return cls(image_size=image_size, patch_size=patch_size, num_layers=12, num_heads=12,
               hidden_dim=hidden, mlp_dim=4 * hidden, num_classes=num_classes)


def _pretrained_vit_b_16(num_classes: int, image_size: int,
                         cls: type[VisionTransformer] = VisionTransformer) -> VisionTransformer:
    # never torchvision's get_state_dict: it unpickles a cached file without weights_only
    state = load_pinned("ViT_B_16_Weights.IMAGENET1K_V1")
    model = cls(image_size=224, patch_size=16, num_layers=12, num_heads=12,
                hidden_dim=768, mlp_dim=3072)
    model.load_state_dict(state)
    if image_size != 224:
        new_state = interpolate_embeddings(image_size, 16, model.state_dict())
        model = cls(image_size=image_size, patch_size=16, num_layers=12,
                    num_heads=12, hidden_dim=768, mlp_dim=3072)
        model.load_state_dict(new_state)
    model.heads = nn.Sequential(nn.Linear(768, num_classes))
    nn.init.zeros_(model.heads[0].weight)
    nn.init.zeros_(model.heads[0].bias)
    return model


def vit_small(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
              patch_size: int = 4, depth: int = 6, heads: int = 8,
              hidden: int = 256) -> VisionTransformer:
    """A small ViT for 32x32 images: patch 4, 6 layers, 8 heads, hidden 256, MLP 2x hidden.

    ``in_channels`` other than 3 are handled by replacing the patch projection.
    """
    if image_size % patch_size:
        raise ValueError(f"image_size {image_size} is not a multiple of patch {patch_size}")
    dim = _heads_dim(scaled(hidden, width), heads)
    model = VisionTransformer(image_size=image_size, patch_size=patch_size, num_layers=depth,
                              num_heads=heads, hidden_dim=dim, mlp_dim=2 * dim,
                              num_classes=num_classes)
    if in_channels != 3:
        old = model.conv_proj
        model.conv_proj = nn.Conv2d(in_channels, dim, kernel_size=patch_size, stride=patch_size)
        nn.init.trunc_normal_(model.conv_proj.weight,
                              std=(1.0 / (in_channels * patch_size * patch_size)) ** 0.5)
        nn.init.zeros_(model.conv_proj.bias)
        del old
    return model
