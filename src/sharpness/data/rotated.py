"""Rotated MNIST: the single-domain-generalization stand-in for PACS/VLCS in the quick
profile. A model trained on upright digits (0 degrees) is tested on the same test digits rotated
by 15, 30, ..., 75 degrees, each angle one unseen "domain" (Ghifary et al. 2015 built the
domains this way). Rotation is torchvision's ``rotate`` (bilinear, black fill, about the
centre).
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor
from torchvision.transforms import InterpolationMode
from torchvision.transforms.functional import rotate


def rotate_images(x: Tensor, degrees: float) -> Tensor:
    """``x`` (N, C, H, W in [0, 1]) rotated counter-clockwise by ``degrees``."""
    if degrees % 360 == 0:
        return x.clone()
    return rotate(x, float(degrees), interpolation=InterpolationMode.BILINEAR, fill=0.0)


def rotated_domains(x: Tensor, angles: Sequence[float]) -> dict[float, Tensor]:
    """One rotated copy of ``x`` per angle (the labels are unchanged)."""
    return {float(a): rotate_images(x, a) for a in angles}


def rotation_invariance_gap(x: Tensor, angle: float) -> float:
    """Mean absolute pixel change caused by the rotation (a sanity number for captions)."""
    return float((rotate_images(x, angle) - x).abs().mean()) if len(x) else 0.0


__all__ = ["rotate_images", "rotated_domains", "rotation_invariance_gap"]
