"""Background-share metric and masks on hand-made maps and images."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from sharpness.gradcam.background import (
    background_mask,
    background_share,
    luma,
    mask_from_config,
    mean_ci,
)


def test_share_on_hand_made_maps() -> None:
    masks = np.zeros((4, 4, 4), bool)
    masks[:, :, :2] = True  # left half is background
    cams = np.zeros((4, 4, 4))
    cams[0, :, :2] = 1.0           # all mass on background
    cams[1, :, 2:] = 1.0           # all mass on foreground
    cams[2] = 1.0                  # uniform map: the background pixel fraction
    cams[3, 0, 0], cams[3, 0, 3] = 3.0, 1.0  # 3 of 4 units on background
    np.testing.assert_allclose(background_share(cams, masks), [1.0, 0.0, 0.5, 0.75])


def test_share_is_scale_invariant_and_nan_without_mass() -> None:
    rng = np.random.default_rng(0)
    cams = rng.random((3, 5, 5))
    masks = rng.random((3, 5, 5)) < 0.3
    np.testing.assert_allclose(background_share(7.5 * cams, masks), background_share(cams, masks))
    zero = np.zeros((1, 5, 5))
    assert np.isnan(background_share(zero, masks[:1]))[0]


def test_share_rejects_bad_maps() -> None:
    masks = np.ones((1, 2, 2), bool)
    with pytest.raises(ValueError, match="non-negative"):
        background_share(-np.ones((1, 2, 2)), masks)
    with pytest.raises(ValueError, match="non-negative"):
        background_share(np.full((1, 2, 2), np.nan), masks)
    with pytest.raises(ValueError, match="both be"):
        background_share(np.ones((1, 2, 3)), masks)


def test_luma_weights_and_grayscale() -> None:
    rgb = torch.zeros(1, 3, 2, 2)
    rgb[0, 0] = 1.0  # pure red
    np.testing.assert_allclose(luma(rgb), 0.299)
    gray = torch.rand(2, 1, 3, 3)
    np.testing.assert_allclose(luma(gray), gray[:, 0].numpy(), rtol=1e-6)


def test_threshold_and_median_masks() -> None:
    img = torch.tensor([[[[0.0, 0.1], [0.5, 0.9]]]])
    np.testing.assert_array_equal(background_mask(img, "threshold", 0.2)[0],
                                  [[True, True], [False, False]])
    np.testing.assert_array_equal(background_mask(img, "below_median")[0],
                                  [[True, True], [False, False]])
    # the digit mask ignores the image and reads the pasted digit
    digit = torch.tensor([[[[0.0, 1.0], [0.0, 0.0]]]])
    mask = mask_from_config(img, {"rule": "digit_mask", "threshold": 0.2}, digit)
    np.testing.assert_array_equal(mask[0], [[True, False], [True, True]])
    with pytest.raises(ValueError, match="needs the padded digits"):
        background_mask(img, "digit_mask")
    with pytest.raises(ValueError, match="unknown background rule"):
        background_mask(img, "bright")


def test_mean_ci_matches_scipy_interval() -> None:
    v = np.array([0.2, 0.4, 0.35, np.nan, 0.6, 0.5])
    mean, half, n = mean_ci(v, 0.9)
    finite = v[np.isfinite(v)]
    lo, hi = stats.t.interval(0.9, len(finite) - 1, loc=finite.mean(), scale=stats.sem(finite))
    assert n == 5
    assert mean == pytest.approx(finite.mean())
    assert half == pytest.approx((hi - lo) / 2)
    assert np.isnan(mean_ci(np.array([np.nan]))[0])
