"""The per-example training losses of the engine (cross-entropy and the EoS square loss)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

#: ``loss(outputs, targets) -> per-example losses``
Criterion = Callable[[Tensor, Tensor], Tensor]


def per_example_loss(kind: str, num_classes: int, label_smoothing: float = 0.0) -> Criterion:
    """Per-example loss: cross-entropy (optionally label-smoothed) or
    MSE ``0.5 * ||f(x) - onehot(y)||^2`` (the square loss of the EoS literature)."""
    if kind == "ce":
        def ce(out: Tensor, y: Tensor) -> Tensor:
            return F.cross_entropy(out.float(), y, reduction="none",
                                   label_smoothing=label_smoothing)
        return ce

    def mse(out: Tensor, y: Tensor) -> Tensor:
        target = F.one_hot(y, num_classes).to(torch.float32)
        return 0.5 * (out.float() - target).square().sum(dim=1)
    return mse

