"""Grad-CAM maps through the grad-cam package (``pytorch_grad_cam``).

:func:`gradcam_maps` is a thin wrapper over ``pytorch_grad_cam.GradCAM`` used in its
context-manager form with explicit targets (the true label of each image, through
``ClassifierOutputTarget``), so the explained logit never depends on what the model
predicts. What the package does, and so what the maps are:

* it puts the model in **eval mode** (``BaseCAM.__init__`` calls ``model.eval()``); the
  wrapper restores the previous mode afterwards. The project's small CNN has no BatchNorm or
  dropout, so eval and train mode compute the same function;
* Grad-CAM weights each channel of the target layer's output by its spatially averaged
  gradient of the target logit, sums over channels, applies a ReLU, then **normalises each
  map per image** (min subtracted, divided by the max) and resizes it bilinearly (OpenCV) to
  the input's height and width, and min-max normalises once more. A map is therefore in
  [0, 1] with the image's shape, and only its *relative* spread carries information: the
  background share (:mod:`sharpness.gradcam.background`) is a ratio, unchanged by the per-map
  scale;
* a map whose channel-weighted sum is nowhere positive comes back all zeros (no mass).

The package's ``__exit__`` swallows an ``IndexError`` raised inside the ``with`` block; the
wrapper checks that every batch produced a map, so such an error cannot pass silently.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def target_layer(model: nn.Module) -> nn.Module:
    """The layer Grad-CAM explains: ``gradcam_layer`` of the model or of its ``.net``.

    Models trained by :mod:`sharpness.train` are wrapped in an input normalisation whose
    ``.net`` is the bare network; the small CNN names its last conv block ``gradcam_layer``.
    """
    for candidate in (model, getattr(model, "net", None)):
        layer = getattr(candidate, "gradcam_layer", None) if candidate is not None else None
        if isinstance(layer, nn.Module):
            return layer
    raise ValueError(f"{type(model).__name__} has no `gradcam_layer` (nor does its `.net`); "
                     "pass the target layer explicitly")


def gradcam_maps(model: nn.Module, images: torch.Tensor, labels: torch.Tensor,
                 layer: nn.Module | None = None, batch_size: int = 256) -> np.ndarray:
    """Grad-CAM maps (N, H, W), float32 in [0, 1], of ``images`` (N, C, H, W) for the logits
    of ``labels`` (N,), explained at ``layer`` (default :func:`target_layer`)."""
    from pytorch_grad_cam import GradCAM  # lazy: pytorch_grad_cam; training imports this
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    if images.ndim != 4 or len(images) != len(labels):
        raise ValueError(f"expected (N, C, H, W) images and N labels, got {tuple(images.shape)} "
                         f"and {tuple(labels.shape)}")
    layer = layer if layer is not None else target_layer(model)
    was_training = model.training
    device = next(model.parameters()).device
    out: list[np.ndarray] = []
    try:
        with GradCAM(model=model, target_layers=[layer]) as cam:
            for start in range(0, len(images), batch_size):
                x = images[start:start + batch_size].to(device)
                targets = [ClassifierOutputTarget(int(c)) for c in labels[start:start + batch_size]]
                out.append(np.asarray(cam(input_tensor=x, targets=targets), dtype=np.float32))
    finally:
        model.train(was_training)
        model.zero_grad(set_to_none=True)
    if sum(len(m) for m in out) != len(images):
        raise RuntimeError("Grad-CAM produced fewer maps than images (an error inside "
                           "pytorch_grad_cam was swallowed by its context manager)")
    maps = np.concatenate(out) if out else np.zeros((0, *images.shape[2:]), np.float32)
    if maps.shape[1:] != tuple(images.shape[2:]):
        raise RuntimeError(f"Grad-CAM maps have shape {maps.shape[1:]}, images "
                           f"{tuple(images.shape[2:])}")
    return maps
