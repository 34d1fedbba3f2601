"""l2-SAM: Foret et al., "Sharpness-Aware Minimization for Efficiently Improving
Generalization", ICLR 2021: ``eps = rho * g / ||g||_2`` (norm over all parameters).

BatchNorm's running statistics are frozen in the perturbed pass (``bn_second_pass =
"freeze"``: davda54/sam ``example/train.py``, ``disable_running_stats``); the guard on the
norm divided by is davda54/sam's ``rho / (||g|| + 1e-12)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sharpness.optim.base import NORM_GUARD, SharpnessOptimizer


class SAM(SharpnessOptimizer, optimizer="sam"):
    """l2-SAM (Foret et al., 2021): ``eps = rho g / ||g||_2``."""

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        scale = self.hparams["rho"] / (grad_norm + NORM_GUARD)
        return torch._foreach_mul(grads, scale) if grads else []
