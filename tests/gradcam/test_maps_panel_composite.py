"""Grad-CAM maps through the package, the shared panel, and the SVHN stand-in."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sharpness.data import load_dataset
from sharpness.data.composite import (
    NAME,
    STAND_IN,
    blend,
    build_mnist_on_cifar,
    pad_digits,
)
from sharpness.gradcam.maps import gradcam_maps, target_layer
from sharpness.gradcam.panel import select_panel
from sharpness.models import build_model


@pytest.fixture(scope="module")
def stand_in():
    return build_mnist_on_cifar(seed=0)


@pytest.mark.parametrize(("channels", "size"), [(1, 28), (3, 32)])
def test_gradcam_maps_have_image_shape_and_are_finite(channels: int, size: int) -> None:
    torch.manual_seed(0)
    model = build_model("cnn", 10, channels, size, channels=4)
    model.train()
    x = torch.rand(6, channels, size, size)
    y = torch.arange(6)
    maps = gradcam_maps(model, x, y, batch_size=4)
    assert maps.shape == (6, size, size)
    assert np.all(np.isfinite(maps))
    assert maps.min() >= 0.0 and maps.max() <= 1.0 + 1e-6
    assert model.training  # the wrapper restores the mode grad-cam switched off
    assert all(p.grad is None for p in model.parameters())


def test_gradcam_matches_hand_computed_map() -> None:
    """Grad-CAM by hand (channel weights = mean gradient, ReLU, min-max, resize) vs package."""
    import cv2

    torch.manual_seed(1)
    model = build_model("cnn", 10, 1, 28, channels=4).eval()
    x, y = torch.rand(3, 1, 28, 28), torch.tensor([3, 1, 4])
    feats = {}
    handle = target_layer(model).register_forward_hook(lambda m, i, o: feats.setdefault("a", o))
    logits = model(x)
    handle.remove()
    act = feats["a"]
    grads = torch.autograd.grad(logits.gather(1, y[:, None]).sum(), act)[0]
    cam = torch.relu((grads.mean(dim=(2, 3), keepdim=True) * act).sum(1)).detach().numpy()
    expected = []
    for c in cam:
        c = c - c.min()
        c = c / (1e-7 + c.max())
        c = cv2.resize(np.float32(c), (28, 28))
        c = c - c.min()
        expected.append(c / (1e-7 + c.max()))
    np.testing.assert_allclose(gradcam_maps(model, x, y), np.stack(expected), atol=1e-5)


def test_target_layer_errors_without_gradcam_layer() -> None:
    with pytest.raises(ValueError, match="gradcam_layer"):
        target_layer(torch.nn.Linear(2, 2))


def test_panel_is_balanced_fixed_and_interleaved() -> None:
    labels = np.repeat(np.arange(5), 7)
    a = select_panel(labels, 3, seed=4)
    assert len(a) == 15 and len(set(a)) == 15
    np.testing.assert_array_equal(labels[a[:5]], np.arange(5))  # one of each class first
    np.testing.assert_array_equal(np.bincount(labels[a]), [3] * 5)
    np.testing.assert_array_equal(a, select_panel(labels, 3, seed=4))
    assert not np.array_equal(a, select_panel(labels, 3, seed=5))
    with pytest.raises(ValueError, match="fewer than"):
        select_panel(labels, 8)


def test_blend_and_padding() -> None:
    digit = torch.zeros(1, 1, 28, 28)
    digit[0, 0, 10, 10] = 1.0
    padded = pad_digits(digit)
    assert padded.shape == (1, 1, 32, 32) and padded[0, 0, 12, 12] == 1.0
    bg = torch.full((1, 3, 32, 32), 0.25)
    out = blend(bg, padded)
    assert torch.allclose(out[0, :, 12, 12], torch.full((3,), 0.75))  # inverted under the digit
    assert torch.allclose(out[0, :, 0, 0], torch.full((3,), 0.25))    # background untouched


def test_stand_in_is_deterministic_labelled_and_shaped(stand_in) -> None:
    ds = stand_in.dataset
    assert ds.name == NAME and ds.x_train.shape == (5000, 3, 32, 32)
    assert ds.x_test.shape == (1000, 3, 32, 32) and stand_in.digit_test.shape == (1000, 1, 32, 32)
    assert float(ds.x_train.min()) >= 0.0 and float(ds.x_train.max()) <= 1.0
    assert ds.info["stand_in"] == STAND_IN and "SVHN" in ds.info["title"]
    mnist = load_dataset("mnist_embedded")
    assert torch.equal(ds.y_test, mnist.y_test)
    other = build_mnist_on_cifar(seed=1).dataset
    assert not torch.equal(other.x_test, ds.x_test)
    # the registry path rebuilds it bit for bit: tests/data/test_registry_loaders.py
    # the digit covers a plausible part of the 32x32 canvas (MNIST strokes: ~10-25 %), and
    # never the 2-pixel padding border
    covered = float((stand_in.digit_test > 0.2).float().mean())
    assert 0.08 < covered < 0.3
    assert float(stand_in.digit_test[..., :2, :].abs().sum()) == 0.0
