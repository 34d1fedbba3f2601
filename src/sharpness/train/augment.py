"""Batch augmentations on tensors: random crop with padding, horizontal flip, Cutout.

The CIFAR recipe of the SAM papers (4-pixel padded random crop, flip, Cutout 16 applied to an
image with probability ``cutout_p``, 0.5 as the official ESAM code that LE-SAM builds on:
dydjw9/Efficient_SAM ``utils/cutout.py``) applied per example to a whole batch at once, with every random number drawn from one CPU
``torch.Generator`` in a fixed order. That generator is part of the training checkpoint, so
a resumed run draws exactly the crops, flips and holes the uninterrupted run would have,
and the draws are the same whatever device the batch lives on.

:func:`draw_params` makes the draws, :func:`apply_params` applies them; the split lets the
tests compare each example with torchvision's functional ``pad``/``crop``/``hflip``/``erase``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

#: the probability that Cutout fires on an image, as dydjw9/Efficient_SAM ``utils/cutout.py``
CUTOUT_P = 0.5


@dataclass
class AugmentParams:
    """Per-example draws: crop offsets, flip flags, Cutout centres and whether Cutout fires
    (all CPU tensors)."""

    top: Tensor | None = None
    left: Tensor | None = None
    flip: Tensor | None = None
    cy: Tensor | None = None
    cx: Tensor | None = None
    cut: Tensor | None = None


def draw_params(n: int, height: int, width: int, *, crop: int, flip: bool, cutout: int,
                generator: torch.Generator, cutout_p: float = CUTOUT_P) -> AugmentParams:
    """Draw the random parameters of ``n`` examples (crop, then flip, then Cutout's centre and
    whether it fires, with probability ``cutout_p``)."""
    p = AugmentParams()
    if crop:
        p.top = torch.randint(0, 2 * crop + 1, (n,), generator=generator)
        p.left = torch.randint(0, 2 * crop + 1, (n,), generator=generator)
    if flip:
        p.flip = torch.rand(n, generator=generator) < 0.5
    if cutout:
        p.cy = torch.randint(0, height, (n,), generator=generator)
        p.cx = torch.randint(0, width, (n,), generator=generator)
        p.cut = torch.rand(n, generator=generator) < cutout_p
    return p


def apply_params(x: Tensor, p: AugmentParams, *, crop: int, cutout: int,
                 fill: Tensor | None = None) -> Tensor:
    """Apply drawn parameters to ``x`` (N, C, H, W); returns a new tensor.

    Crop: zero-pad by ``crop`` then take the ``H x W`` window at ``(top, left)`` (as
    ``torchvision.transforms.RandomCrop(padding=crop)``). Cutout (DeVries & Taylor 2017): a
    ``cutout x cutout`` square centred at ``(cy, cx)``, clipped at the border, set to ``fill``
    (per-channel; default 0), on the examples whose ``cut`` flag is set (all when absent).
    """
    n, c, h, w = x.shape
    dev = x.device
    if crop and p.top is not None and p.left is not None:
        padded = F.pad(x, (crop, crop, crop, crop))
        rows = (p.top.to(dev)[:, None] + torch.arange(h, device=dev))[:, None, :, None]
        cols = (p.left.to(dev)[:, None] + torch.arange(w, device=dev))[:, None, None, :]
        batch = torch.arange(n, device=dev)[:, None, None, None]
        chan = torch.arange(c, device=dev)[None, :, None, None]
        x = padded[batch, chan, rows, cols]
    if p.flip is not None:
        x = torch.where(p.flip.to(dev)[:, None, None, None], x.flip(-1), x)
    if cutout and p.cy is not None and p.cx is not None:
        ys = torch.arange(h, device=dev)[None, :]
        xs = torch.arange(w, device=dev)[None, :]
        y0 = (p.cy.to(dev) - cutout // 2)[:, None]
        x0 = (p.cx.to(dev) - cutout // 2)[:, None]
        in_y = (ys >= y0) & (ys < y0 + cutout)
        in_x = (xs >= x0) & (xs < x0 + cutout)
        hole = (in_y[:, :, None] & in_x[:, None, :])[:, None]
        if p.cut is not None:
            hole = hole & p.cut.to(dev)[:, None, None, None]
        value = torch.zeros(1, c, 1, 1, device=dev, dtype=x.dtype) if fill is None else \
            fill.to(device=dev, dtype=x.dtype).view(1, c, 1, 1)
        x = torch.where(hole, value, x)
    return x.contiguous()


def augment_batch(x: Tensor, *, crop: int = 0, flip: bool = False, cutout: int = 0,
                  generator: torch.Generator, fill: Tensor | None = None,
                  cutout_p: float = CUTOUT_P) -> Tensor:
    """Draw and apply: the one call the training loop makes (a no-op when all are off)."""
    if not (crop or flip or cutout):
        return x
    params = draw_params(x.shape[0], x.shape[2], x.shape[3], crop=crop, flip=flip,
                         cutout=cutout, generator=generator, cutout_p=cutout_p)
    return apply_params(x, params, crop=crop, cutout=cutout, fill=fill)
