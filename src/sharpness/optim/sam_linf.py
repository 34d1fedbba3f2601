"""l_inf-SAM: the l_inf-ball version of SAM's first-order inner maximisation.

``eps = rho * sign(g)`` (the dual-norm solution for p = inf; the ``minorfirst`` paper's
l_inf-SAM): each coordinate moves by ``rho``. It has no official code: BatchNorm in the
perturbed pass follows ``sam`` (running statistics frozen), and nothing is divided, so there
is no norm guard.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from sharpness.optim.sam import SAM
from sharpness.optim.sam import SPEC as SAM_SPEC
from sharpness.optim.spec import OptimizerSpec

#: l2-SAM's hyper-parameters and defaults (no official l_inf code chooses others)
SPEC = OptimizerSpec(name="sam_linf", label=r"$\ell_\infty$-SAM", text="SAM (L_inf)",
                     reference="the l_inf ball of Foret et al., ICLR 2021 (the minorfirst "
                               "paper's l_inf-SAM); no official code",
                     hparams=SAM_SPEC.hparams, colour="#d55e00", aliases=("linf", "linf_sam"),
                     tiny_hparams={"rho": 0.0005})


class LinfSAM(SAM):
    """l_inf-SAM: ``eps = rho sign(g)`` (each coordinate moved by ``rho``)."""

    spec: ClassVar[OptimizerSpec] = SPEC

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        rho = self.hparams["rho"]
        return [torch.sign(g).mul_(rho) for g in grads]
