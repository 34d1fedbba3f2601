"""The SVHN stand-in: MNIST digits composited on CIFAR-10 crops (MNIST-M style).

SVHN is not embedded, so the quick profile builds a digit data set with natural-image
backgrounds from the two embedded subsets, the way MNIST-M (Ganin & Lempitsky, 2015) was made
from MNIST and BSDS500 patches:

1. each MNIST digit ``d`` (28x28, in [0, 1]) is zero-padded to 32x32, centred;
2. a CIFAR-10 image of the same split is drawn at random, a random square crop of side
   ``crop`` (default 24) is cut from it and resized (bilinear) back to 32x32, and flipped
   left-right with probability 1/2;
3. the composite is the *difference blend* ``|background - d|`` on every colour channel: where
   the digit is on, the background's colours are inverted, so the digit is visible on any
   background but is neither always brighter nor always darker than it (as in SVHN).

Train digits go on train crops and test digits on test crops, so no CIFAR image is shared
across the split. Everything is drawn from one ``numpy.random.Generator(seed)``: the same seed
gives the same data set, bit for bit. The padded digit intensity is kept beside the images
(:attr:`Composite.digit_test`), because on this data set "background" has an exact meaning:
the pixels the digit does not cover. The label is the digit's.

Registry name: ``mnist_on_cifar`` (``load_dataset("mnist_on_cifar")``, registered in
:mod:`sharpness.data.registry` like any data set), always labelled as a stand-in
(:data:`STAND_IN`) in the data info, and so in every provenance that records it; the padded
digits come with it as ``extras["digit_train"]``/``extras["digit_test"]``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from sharpness.data.arrays import ArrayDataset
from sharpness.data.embedded import load_embedded
from sharpness.data.registry import get_spec

#: registry name of the stand-in
NAME = "mnist_on_cifar"
#: the label every figure, caption and provenance carries (the registry's)
STAND_IN: str = get_spec(NAME).stand_in or ""
#: side of the composite images (SVHN's)
SIZE = 32


@dataclass
class Composite:
    """The stand-in data set plus the padded digit intensity of every image (N, 1, 32, 32)."""

    dataset: ArrayDataset
    digit_train: torch.Tensor
    digit_test: torch.Tensor


def pad_digits(digits: torch.Tensor, size: int = SIZE) -> torch.Tensor:
    """Zero-pad (N, 1, h, w) digits to (N, 1, size, size), centred."""
    n, c, h, w = digits.shape
    if c != 1 or h > size or w > size:
        raise ValueError(f"expected (N, 1, h<={size}, w<={size}) digits, got {tuple(digits.shape)}")
    top, left = (size - h) // 2, (size - w) // 2
    return F.pad(digits, (left, size - w - left, top, size - h - top))


def random_crops(images: torch.Tensor, count: int, rng: np.random.Generator, crop: int = 24,
                 size: int = SIZE) -> torch.Tensor:
    """``count`` backgrounds: random image, random ``crop``-square, resized to ``size``, random
    left-right flip. ``images`` is (M, 3, H, W) in [0, 1]."""
    m, _, h, w = images.shape
    if not 0 < crop <= min(h, w):
        raise ValueError(f"crop must be in 1..{min(h, w)}, got {crop}")
    which = rng.integers(0, m, size=count)
    top = rng.integers(0, h - crop + 1, size=count)
    left = rng.integers(0, w - crop + 1, size=count)
    flip = rng.random(count) < 0.5
    offsets = torch.arange(crop)
    rows = torch.from_numpy(top)[:, None] + offsets          # (count, crop)
    cols = torch.from_numpy(left)[:, None] + offsets
    picked = images[torch.from_numpy(which)]                  # (count, C, H, W)
    patches = picked[torch.arange(count)[:, None, None, None],
                     torch.arange(picked.shape[1])[None, :, None, None],
                     rows[:, None, :, None], cols[:, None, None, :]]
    if crop != size:
        patches = F.interpolate(patches, size=(size, size), mode="bilinear", align_corners=False)
    patches[torch.from_numpy(flip)] = patches[torch.from_numpy(flip)].flip(-1)
    return patches.clamp_(0.0, 1.0)


def blend(backgrounds: torch.Tensor, digits: torch.Tensor) -> torch.Tensor:
    """MNIST-M's difference blend ``|background - digit|`` (digit broadcast over channels)."""
    return (backgrounds - digits).abs()


def composite(digits: torch.Tensor, backgrounds: torch.Tensor, rng: np.random.Generator,
              crop: int = 24) -> tuple[torch.Tensor, torch.Tensor]:
    """Composite images (N, 3, 32, 32) and padded digits (N, 1, 32, 32) for ``digits``."""
    padded = pad_digits(digits)
    crops = random_crops(backgrounds, len(digits), rng, crop=crop)
    return blend(crops, padded), padded


def build_mnist_on_cifar(root: str | os.PathLike[str] | None = None, seed: int = 0,
                         crop: int = 24) -> Composite:
    """Build the stand-in from ``mnist_embedded`` (5k/1k digits) and ``cifar10_embedded``
    (4k/1k backgrounds): 5k train and 1k test composites, labels = digit labels."""
    mnist = load_embedded("mnist_embedded", root)
    cifar = load_embedded("cifar10_embedded", root)
    rng = np.random.default_rng(seed)
    x_train, d_train = composite(mnist.x_train, cifar.x_train, rng, crop)
    x_test, d_test = composite(mnist.x_test, cifar.x_test, rng, crop)
    info = {"name": NAME, "title": "SVHN stand-in: " + STAND_IN, "stand_in": STAND_IN,
            "seed": seed, "crop": crop, "blend": "|background - digit|",
            "sources": [mnist.info, cifar.info]}
    ds = ArrayDataset(NAME, x_train.contiguous(), mnist.y_train.clone(), x_test.contiguous(),
                      mnist.y_test.clone(), num_classes=10, info=info)
    return Composite(ds, d_train, d_test)


def load_mnist_on_cifar(name: str = NAME, root: str | os.PathLike[str] | None = None, *,
                        mirror: str | os.PathLike[str] | None = None, download: bool = True,
                        seed: int = 0) -> ArrayDataset:
    """The stand-in as an :class:`ArrayDataset` with its padded digits in ``extras`` (the
    registry's loader: ``load_dataset("mnist_on_cifar")``). Built from the committed subsets,
    so ``mirror`` and ``download`` do not apply."""
    if name != NAME:
        raise ValueError(f"load_mnist_on_cifar builds {NAME!r}, not {name!r}")
    comp = build_mnist_on_cifar(root, seed)
    comp.dataset.extras = {"digit_train": comp.digit_train, "digit_test": comp.digit_test}
    return comp.dataset
