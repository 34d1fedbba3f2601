"""Gradient descent and the fixed-radius SAM family: l2-SAM, l_inf-SAM, ASAM.

* ``sgd``: plain (stochastic) gradient descent through the base optimizer; one pass, ``eps=0``.
* ``sam``: Foret et al., "Sharpness-Aware Minimization for Efficiently Improving
  Generalization", ICLR 2021: ``eps = rho * g / ||g||_2`` (norm over all parameters).
* ``sam_linf``: the l_inf-ball version of the same first-order inner maximisation,
  ``eps = rho * sign(g)`` (the dual-norm solution for p = inf; the ``minorfirst`` paper's
  l_inf-SAM).
* ``asam``: Kwon et al., "ASAM: Adaptive Sharpness-Aware Minimization for Scale-Invariant
  Learning of Deep Neural Networks", ICML 2021: ``eps = rho * T^2 g / ||T g||_2`` with the
  element-wise operator ``T = |w| + eta`` on weight tensors and ``T = 1`` on the rest (biases),
  as in the authors' code (parameters whose name contains "weight"; ``eta = 0.01`` is the
  class default of SamsungLabs/ASAM ``asam.py``, whose ``example_cifar.py`` runs ``eta = 0``;
  ``rho = 0.5`` for CIFAR-10 and 1.0 for CIFAR-100 in its README).

BatchNorm in the perturbed pass (``bn_second_pass``), as each official loop does: ``sam``
freezes the running statistics (davda54/sam ``example/train.py``, ``disable_running_stats``);
``asam`` updates them in both passes (SamsungLabs/ASAM ``example_cifar.py`` keeps the model in
train mode); ``sam_linf`` has no official loop and follows ``sam``.

Guards on the norm divided by, as each official code: ``sam`` ``rho / (||g|| + 1e-12)``
(davda54/sam), ``asam`` ``rho / (||T g|| + 1e-16)`` (SamsungLabs/ASAM); ``sam_linf`` divides by
nothing.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from sharpness.optim.base import NORM_GUARD, SharpnessOptimizer
from sharpness.radius import SAM_RHO

#: ASAM's guard on ``||T g||`` (SamsungLabs/ASAM ``asam.py``: ``norm + 1.e-16``)
ASAM_NORM_GUARD = 1e-16


class GradientDescent(SharpnessOptimizer):
    """Plain GD/SGD (the base optimizer's step) behind the common interface; ``eps = 0``."""

    name: ClassVar[str] = "sgd"
    hparam_defaults: ClassVar[dict[str, Any]] = {}
    two_pass: ClassVar[bool] = False

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        return [torch.zeros_like(g) for g in grads]


class SAM(SharpnessOptimizer):
    """l2-SAM (Foret et al., 2021): ``eps = rho g / ||g||_2``."""

    name: ClassVar[str] = "sam"
    hparam_defaults: ClassVar[dict[str, Any]] = {"rho": SAM_RHO, "bn_second_pass": "freeze"}

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        scale = self.hparams["rho"] / (grad_norm + NORM_GUARD)
        return torch._foreach_mul(grads, scale) if grads else []


class LinfSAM(SAM):
    """l_inf-SAM: ``eps = rho sign(g)`` (each coordinate moved by ``rho``); SAM's defaults."""

    name: ClassVar[str] = "sam_linf"

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        rho = self.hparams["rho"]
        return [torch.sign(g).mul_(rho) for g in grads]


class ASAM(SharpnessOptimizer):
    """Adaptive SAM (Kwon et al., 2021): ``eps = rho T^2 g / ||T g||``, ``T = |w| + eta``."""

    name: ClassVar[str] = "asam"
    hparam_defaults: ClassVar[dict[str, Any]] = {"rho": 0.5, "eta": 0.01,
                                                 "bn_second_pass": "update"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._is_weight = {id(p): "weight" in name for name, p in self.model.named_parameters()}

    def _validate(self) -> None:
        super()._validate()
        if self.hparams["eta"] < 0:
            raise ValueError(
                f"optimizer 'asam': eta must be non-negative, got {self.hparams['eta']}"
            )

    def scaling(self, param: Tensor) -> Tensor | float:
        """The diagonal of ``T`` for one parameter tensor (``1`` for non-weight tensors)."""
        if self._is_weight.get(id(param), False):
            return param.detach().abs().add_(self.hparams["eta"])
        return 1.0

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        scaled = [self.scaling(p) * g for p, g in zip(params, grads, strict=True)]  # T g
        norm = self._global_norm(scaled)
        scale = self.hparams["rho"] / (norm + ASAM_NORM_GUARD)
        return [
            (self.scaling(p) * tg).mul_(scale) for p, tg in zip(params, scaled, strict=True)
        ]  # rho T (T g) / ||T g||
