"""Long-tailed subsets follow the exponential profile; Rotated MNIST rotates correctly."""

from __future__ import annotations

import math

import pytest
import torch

from sharpness.data.longtail import longtail_counts, longtail_indices
from sharpness.data.rotated import rotate_images, rotated_domains


@pytest.mark.parametrize("factor", [100, 50, 10])
def test_counts_follow_exponential_profile(factor):
    counts = longtail_counts(10, 500, factor)
    assert counts[0] == 500
    assert counts[-1] == math.floor(500 / factor)
    for c, n in enumerate(counts):
        target = 500 * factor ** (-c / 9)
        assert target - 1 < n <= target + 1e-6
    assert all(a >= b for a, b in zip(counts, counts[1:], strict=False))


def test_longtail_subset_of_embedded_cifar_has_profile_counts():
    from sharpness.data import load_dataset

    y = load_dataset("cifar10_embedded").y_train
    idx, counts = longtail_indices(y, 100, seed=3)
    kept = torch.bincount(y[idx], minlength=10).tolist()
    assert kept == counts
    n_max = int(torch.bincount(y).min())
    assert counts == longtail_counts(10, n_max, 100)
    assert len(set(idx.tolist())) == len(idx)  # without replacement
    idx2, _ = longtail_indices(y, 100, seed=3)
    assert torch.equal(idx, idx2)
    idx3, _ = longtail_indices(y, 100, seed=4)
    assert not torch.equal(idx, idx3)


def test_longtail_rejects_impossible_profile():
    y = torch.tensor([0] * 5 + [1] * 2)
    with pytest.raises(ValueError, match="class 1"):
        longtail_indices(y, 1.0, n_max=5)


def test_rotation_by_90_is_rot90_and_0_is_identity():
    x = torch.rand(3, 1, 28, 28)
    torch.testing.assert_close(rotate_images(x, 0), x)
    torch.testing.assert_close(rotate_images(x, 90), torch.rot90(x, 1, dims=(2, 3)),
                               atol=1e-5, rtol=0)
    doms = rotated_domains(x, [0, 45])
    assert set(doms) == {0.0, 45.0}
    assert float((doms[45.0] - x).abs().mean()) > 0.05
