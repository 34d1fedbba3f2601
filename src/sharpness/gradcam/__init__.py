"""Grad-CAM study of the `minorfirst` paper: where CNNs trained by GD and SAM look.

* :mod:`~sharpness.gradcam.background`: background masks and the background-share metric;
* :mod:`~sharpness.gradcam.maps`: Grad-CAM maps through the grad-cam package;
* :mod:`~sharpness.gradcam.panel`: the fixed, class-balanced panel of test images;
* :mod:`~sharpness.gradcam.study`: the config grid, training and map computation;
* :mod:`~sharpness.gradcam.figures`: the figure grid, the table and the computed claim.

``pytorch_grad_cam`` (slow to import: it pulls in torchvision and OpenCV) is imported only
inside :func:`gradcam_maps`; the names below load their module on first use, so the figure
job (:mod:`~sharpness.gradcam.figures`, numpy only) never imports torch.
"""

from importlib import import_module
from typing import Any

#: public name -> the module that defines it; imported on first use, so that importing
#: ``sharpness.gradcam.figures`` (the figure job) does not import torch through this package
_EXPORTS = {"background_mask": "background", "background_share": "background",
            "luma": "background", "mask_from_config": "background", "mean_ci": "background",
            "gradcam_maps": "maps", "target_layer": "maps", "select_panel": "panel"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"sharpness.gradcam.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'sharpness.gradcam' has no attribute {name!r}")
