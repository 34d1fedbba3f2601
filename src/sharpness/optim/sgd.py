"""Gradient descent: plain (stochastic) gradient descent through the base optimizer.

One pass a step and ``eps = 0``, behind the same interface as the sharpness-aware family, so
that training code, logs and checkpoints are identical across optimizers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sharpness.optim.base import SharpnessOptimizer


class GradientDescent(SharpnessOptimizer, optimizer="sgd"):
    """Plain GD/SGD (the base optimizer's step) behind the common interface; ``eps = 0``."""

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        return [torch.zeros_like(g) for g in grads]
