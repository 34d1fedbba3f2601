"""Background masks and the background share of a Grad-CAM map.

The `minorfirst` paper reports that CNNs trained with SAM (at a middle init scale) put more of
their Grad-CAM attention on dark background / low-intensity pixels than GD does. This module
makes that a number:

    background share of a map ``c >= 0`` under a mask ``m`` =  sum_p c_p m_p / sum_p c_p

the fraction of the map's mass on background pixels. A uniform map scores the background
pixel fraction ``mean_p m_p``, which the tables print beside it as the chance level. A map
with no mass (all zeros: every channel-weighted activation was negative) has no share: it is
``NaN``, counted and left out of the means.

Background ("low intensity") is defined per data set by one of three rules (config key
``background.rule``), all on the luma ``Y = 0.299 R + 0.587 G + 0.114 B`` (ITU-R BT.601; the
intensity itself for grayscale) of the raw image in [0, 1]:

``threshold``
    ``Y < threshold``. For MNIST (white digit on black), threshold 0.2: the black surround
    and the faint anti-aliased rim are background, the stroke is foreground.
``below_median``
    ``Y < median(Y)`` of the same image: the darker half of a natural image (CIFAR-10, real
    SVHN), which has no black surround; the chance level is then about 0.5.
``digit_mask``
    the composited SVHN stand-in: the pixels the pasted digit does not cover, i.e. padded
    digit intensity ``< threshold`` (known exactly from the construction; the luma of a
    difference-blended image says nothing about which pixels are digit).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

if TYPE_CHECKING:  # torch is not imported at run time: the figure job reads numpy arrays only
    import torch

#: BT.601 luma weights of R, G, B
LUMA = (0.299, 0.587, 0.114)
RULES = ("threshold", "below_median", "digit_mask")


def luma(images: torch.Tensor | np.ndarray) -> np.ndarray:
    """(N, H, W) luma of (N, C, H, W) images in [0, 1] (C = 1: the intensity itself)."""
    x = images.detach().cpu().numpy() if hasattr(images, "detach") else np.asarray(images)
    if x.ndim != 4 or x.shape[1] not in (1, 3):
        raise ValueError(f"expected (N, 1|3, H, W) images, got shape {x.shape}")
    if x.shape[1] == 1:
        return x[:, 0].astype(np.float64)
    return np.tensordot(np.asarray(LUMA), x.astype(np.float64), axes=([0], [1]))


def background_mask(images: torch.Tensor | np.ndarray, rule: str, threshold: float = 0.2,
                    digits: torch.Tensor | np.ndarray | None = None) -> np.ndarray:
    """Boolean (N, H, W) mask of background pixels by ``rule`` (see the module docstring)."""
    if rule == "threshold":
        return luma(images) < threshold
    if rule == "below_median":
        y = luma(images)
        return y < np.median(y.reshape(len(y), -1), axis=1)[:, None, None]
    if rule == "digit_mask":
        if digits is None:
            raise ValueError("background rule 'digit_mask' needs the padded digits")
        return luma(digits) < threshold
    raise ValueError(f"unknown background rule {rule!r}; known: {', '.join(RULES)}")


def mask_from_config(images: torch.Tensor, spec: Mapping[str, Any],
                     digits: torch.Tensor | None = None) -> np.ndarray:
    """:func:`background_mask` with ``spec = {"rule": ..., "threshold": ...}`` from config."""
    return background_mask(images, spec["rule"], float(spec.get("threshold", 0.2)), digits)


def background_share(cams: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Per-map share of mass on the mask: ``sum(c * m) / sum(c)``; ``NaN`` for a massless map.

    ``cams`` (N, H, W) must be non-negative (Grad-CAM maps are, after its ReLU); ``masks``
    (N, H, W) boolean or 0/1.
    """
    c = np.asarray(cams, dtype=np.float64)
    m = np.asarray(masks, dtype=np.float64)
    if c.shape != m.shape or c.ndim != 3:
        raise ValueError(f"cams and masks must both be (N, H, W), got {c.shape} and {m.shape}")
    if np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ValueError("Grad-CAM maps must be finite and non-negative")
    total = c.sum(axis=(1, 2))
    on_bg = (c * m).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, on_bg / np.where(total > 0, total, 1.0), np.nan)


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, int]:
    """Mean, half-width of the Student-t confidence interval, and n of the finite values.

    The t interval treats the values as independent draws; for pooled (image, seed) shares it
    is the interval the tables print, with per-seed means in the CSV beside it.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return float("nan"), float("nan"), 0
    if n == 1:
        return float(v[0]), float("nan"), 1
    sem = stats.sem(v)
    half = float(sem * stats.t.ppf(0.5 + level / 2, n - 1))
    return float(v.mean()), half, n
