"""Tensor augmentations agree, example by example, with torchvision's functional ops."""

from __future__ import annotations

import pytest
import torch
import torchvision.transforms.v2.functional as TF

from sharpness.train.augment import apply_params, augment_batch, draw_params


def test_matches_torchvision_functional():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(16, 3, 12, 10, generator=gen)
    fill = torch.tensor([0.1, 0.2, 0.3])
    p = draw_params(16, 12, 10, crop=3, flip=True, cutout=5, generator=gen)
    out = apply_params(x, p, crop=3, cutout=5, fill=fill)
    assert p.flip.any() and (~p.flip).any()
    for i in range(16):
        ref = TF.crop(TF.pad(x[i], [3]), int(p.top[i]), int(p.left[i]), 12, 10)
        if p.flip[i]:
            ref = TF.horizontal_flip(ref)
        y0, x0 = int(p.cy[i]) - 2, int(p.cx[i]) - 2
        ya, xa = max(y0, 0), max(x0, 0)
        yb, xb = min(y0 + 5, 12), min(x0 + 5, 10)
        if p.cut[i]:  # Cutout fired on this image (probability 0.5)
            ref = TF.erase(ref, ya, xa, yb - ya, xb - xa,
                           fill.view(3, 1, 1).expand(3, yb - ya, xb - xa))
        torch.testing.assert_close(out[i], ref)
    assert p.cut.any() and (~p.cut).any()


def test_same_generator_state_same_batch_and_noop():
    x = torch.rand(8, 1, 8, 8)
    a = augment_batch(x, crop=2, flip=True, cutout=3, generator=torch.Generator().manual_seed(5))
    b = augment_batch(x, crop=2, flip=True, cutout=3, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and not torch.equal(a, x)
    assert augment_batch(x, generator=torch.Generator()) is x


def test_cutout_fires_with_its_probability_official_half_by_default():
    """Cutout fires on an image with probability ``cutout_p``: 0.5 by default, as
    dydjw9/Efficient_SAM utils/cutout.py; 0 never, 1 always."""
    import inspect

    from sharpness.train.augment import CUTOUT_P
    from sharpness.train.config import AUGMENT_KEYS

    x = torch.ones(4000, 1, 8, 8)

    def holed(**kw) -> float:
        out = augment_batch(x, cutout=4, generator=torch.Generator().manual_seed(3), **kw)
        return float((out == 0).flatten(1).any(1).float().mean())

    assert CUTOUT_P == AUGMENT_KEYS["cutout_p"] == 0.5
    assert inspect.signature(augment_batch).parameters["cutout_p"].default == CUTOUT_P
    assert 0.46 < holed() < 0.54
    assert holed(cutout_p=1.0) == 1.0 and holed(cutout_p=0.0) == 0.0
    assert 0.2 < holed(cutout_p=0.25) < 0.3


def test_cutout_p_is_checked_in_the_config():
    from sharpness.errors import ConfigError
    from sharpness.train.config import validate_config

    base = {"dataset": "mnist", "model": "fcn"}
    assert validate_config({**base, "augment": {"cutout": 4}})["augment"]["cutout_p"] == 0.5
    for bad in (1.5, -0.1, "half", True):
        with pytest.raises(ConfigError, match="cutout_p"):
            validate_config({**base, "augment": {"cutout": 4, "cutout_p": bad}})
