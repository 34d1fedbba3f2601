"""The fixed panel of test images every model of a data set is explained on.

All models of one data set (every optimizer, init scale and seed) are explained on the *same*
test images, so differences between maps are differences between models. The panel is
class-balanced (``per_class`` images of each label) and drawn with its own seed from the test
set, independent of any training seed. The first ``show`` panel entries (one class each, in
label order) are the images drawn in the figure grid; the metric uses the whole panel.
"""

from __future__ import annotations

import numpy as np
import torch


def select_panel(labels: torch.Tensor | np.ndarray, per_class: int, seed: int = 0) -> np.ndarray:
    """Indices into the test set: ``per_class`` of each label, interleaved by class.

    Order: one image of every class (classes ascending), then a second of every class, ...
    so any prefix is as balanced as it can be. Raises if a class has too few images.
    """
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
    if per_class < 1:
        raise ValueError(f"per_class must be >= 1, got {per_class}")
    rng = np.random.default_rng(seed)
    chosen = []
    for c in np.unique(y):
        pool = np.flatnonzero(y == c)
        if len(pool) < per_class:
            raise ValueError(f"class {c} has {len(pool)} test images, fewer than {per_class}")
        chosen.append(np.sort(rng.choice(pool, size=per_class, replace=False)))
    return np.stack(chosen, axis=1).reshape(-1)  # (per_class, classes) row-major: interleaved
