"""Long-tailed subsets with the exponential profile of CIFAR-LT (Cui et al. 2019; Cao et al.
2019, LDAM): class ``c`` of ``C`` keeps ``n_c = floor(n_max * IF ** (-c / (C - 1)))`` examples,
so the head class has ``n_max``, the tail class ``n_max / IF``, and the imbalance factor IF is
their ratio. The kept examples of each class are drawn without replacement by a seeded
generator (GLMC's own generator once drew with replacement; we do not), and the test set stays
balanced, as in the benchmark.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor


def longtail_counts(num_classes: int, n_max: int, imbalance_factor: float) -> list[int]:
    """Per-class counts ``floor(n_max * IF^(-c/(C-1)))`` for ``c = 0..C-1`` (head first)."""
    if num_classes < 2 or n_max < 1 or imbalance_factor < 1:
        raise ValueError(f"need num_classes >= 2, n_max >= 1, imbalance_factor >= 1; got "
                         f"{num_classes}, {n_max}, {imbalance_factor}")
    return [max(1, math.floor(n_max * imbalance_factor ** (-c / (num_classes - 1)) + 1e-9))
            for c in range(num_classes)]


def longtail_indices(labels: Tensor, imbalance_factor: float, *, n_max: int | None = None,
                     seed: int = 0) -> tuple[Tensor, list[int]]:
    """Indices of a long-tailed subset of ``labels`` and the per-class counts kept.

    ``n_max`` defaults to the size of the smallest class, so every class can meet its target
    exactly (the embedded CIFAR-10 subset is not exactly balanced). Indices come back sorted,
    so the subset keeps the original order.
    """
    y = labels.cpu().numpy()
    classes = int(y.max()) + 1
    available = np.bincount(y, minlength=classes)
    n_max = int(available.min()) if n_max is None else n_max
    counts = longtail_counts(classes, n_max, imbalance_factor)
    rng = np.random.default_rng(seed)
    keep: list[np.ndarray] = []
    for c, n in enumerate(counts):
        pool = np.flatnonzero(y == c)
        if n > len(pool):
            raise ValueError(f"class {c} has {len(pool)} examples, the profile needs {n}")
        keep.append(rng.choice(pool, size=n, replace=False))
    return torch.from_numpy(np.sort(np.concatenate(keep))), counts
