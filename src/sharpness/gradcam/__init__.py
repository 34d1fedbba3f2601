"""Grad-CAM study of the `minorfirst` paper: where CNNs trained by GD and SAM look.

* :mod:`~sharpness.gradcam.background`: background masks and the background-share metric;
* :mod:`~sharpness.gradcam.maps`: Grad-CAM maps through the grad-cam package;
* :mod:`~sharpness.gradcam.panel`: the fixed, class-balanced panel of test images;
* :mod:`~sharpness.gradcam.study`: the config grid, training and map computation;
* :mod:`~sharpness.gradcam.figures`: the figure grid, the table and the computed claim.

``pytorch_grad_cam`` (slow to import: it pulls in torchvision and OpenCV) is imported only
inside :func:`gradcam_maps`.
"""

from sharpness.gradcam.background import (
    background_mask,
    background_share,
    luma,
    mask_from_config,
    mean_ci,
)
from sharpness.gradcam.maps import gradcam_maps, target_layer
from sharpness.gradcam.panel import select_panel

__all__ = ["background_mask", "background_share", "gradcam_maps", "luma", "mask_from_config",
           "mean_ci", "select_panel", "target_layer"]
