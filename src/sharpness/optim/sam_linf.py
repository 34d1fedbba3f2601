"""l_inf-SAM: the l_inf-ball version of SAM's first-order inner maximisation.

``eps = rho * sign(g)`` (the dual-norm solution for p = inf; the ``minorfirst`` paper's
l_inf-SAM): each coordinate moves by ``rho``. It has no official code: BatchNorm in the
perturbed pass follows ``sam`` (running statistics frozen), and nothing is divided, so there
is no norm guard.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sharpness.optim.sam import SAM


class LinfSAM(SAM, optimizer="sam_linf"):
    """l_inf-SAM: ``eps = rho sign(g)`` (each coordinate moved by ``rho``)."""

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        rho = self.hparams["rho"]
        return [torch.sign(g).mul_(rho) for g in grads]
