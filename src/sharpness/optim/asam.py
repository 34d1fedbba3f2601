"""ASAM: Kwon et al., "ASAM: Adaptive Sharpness-Aware Minimization for Scale-Invariant
Learning of Deep Neural Networks", ICML 2021.

``eps = rho * T^2 g / ||T g||_2`` with the element-wise operator ``T = |w| + eta`` on weight
tensors and ``T = 1`` on the rest (biases), as in the authors' code (parameters whose name
contains "weight"; ``eta = 0.01`` is the class default of SamsungLabs/ASAM ``asam.py``, whose
``example_cifar.py`` runs ``eta = 0``; ``rho = 0.5`` for CIFAR-10 and 1.0 for CIFAR-100 in its
README). BatchNorm running statistics are updated in both passes (``bn_second_pass =
"update"``: ``example_cifar.py`` keeps the model in train mode). The guard on the norm divided
by is the official ``rho / (||T g|| + 1e-16)``.
"""

from __future__ import annotations

from torch import Tensor

from sharpness.optim.base import SharpnessOptimizer

#: ASAM's guard on ``||T g||`` (SamsungLabs/ASAM ``asam.py``: ``norm + 1.e-16``)
ASAM_NORM_GUARD = 1e-16

class ASAM(SharpnessOptimizer, optimizer="asam"):
    """Adaptive SAM (Kwon et al., 2021): ``eps = rho T^2 g / ||T g||``, ``T = |w| + eta``."""

    def _setup(self) -> None:
        self._is_weight = {id(p): "weight" in name for name, p in self.model.named_parameters()}

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
