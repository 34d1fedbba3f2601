"""l2-SAM: Foret et al., "Sharpness-Aware Minimization for Efficiently Improving
Generalization", ICLR 2021: ``eps = rho * g / ||g||_2`` (norm over all parameters).

BatchNorm's running statistics are frozen in the perturbed pass (``bn_second_pass =
"freeze"``: davda54/sam ``example/train.py``, ``disable_running_stats``); the guard on the
norm divided by is davda54/sam's ``rho / (||g|| + 1e-12)``.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from sharpness.optim.base import NORM_GUARD, SharpnessOptimizer
from sharpness.optim.radius import SAM_RHO
from sharpness.optim.spec import HParam, OptimizerSpec

SPEC = OptimizerSpec(
    name="sam",
    label=r"$\ell_2$-SAM",
    text="SAM",
    reference="Foret et al., ICLR 2021; code davda54/sam",
    hparams=(
        HParam("rho", SAM_RHO, "official: davda54/sam sam.py (default rho)"),
        HParam("bn_second_pass", "freeze", "official: davda54/sam example/train.py"),
    ),
    colour="#029e73",
    aliases=("l2", "l2_sam"),
    tiny_hparams={"rho": 0.02},
)


class SAM(SharpnessOptimizer):
    """l2-SAM (Foret et al., 2021): ``eps = rho g / ||g||_2``."""

    spec: ClassVar[OptimizerSpec] = SPEC

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        scale = self.hparams["rho"] / (grad_norm + NORM_GUARD)
        return torch._foreach_mul(grads, scale) if grads else []
