"""ESAM: Du, Yan, Feng, Zhou, Zhen, Goh, Tan, "Efficient Sharpness-aware Minimization for
Improved Training of Neural Networks", ICLR 2022.

Two changes to SAM, as the official code does them (dydjw9/Efficient_SAM ``utils/Esam.py``):

* Stochastic weight perturbation (SWP), ``swp = "tensor"`` (official): each parameter *tensor*
  is kept with probability ``beta``; the others get no gradient in the first pass (the
  official code sets ``requires_grad = False`` on them after the previous step, so the first
  step of training keeps every tensor). With ``g_S`` the gradient of the kept tensors,
  ``eps = rho g_S / (||g_S||_2 + 1e-7) / beta`` (the official guard) on them and 0 elsewhere, so ``||eps|| = rho / beta``.
  The perturbed pass and the base step use every tensor. ``swp = "coordinate"`` keeps each
  *coordinate* with probability ``beta`` and divides by the full-gradient norm
  (``eps = m * rho g / (beta ||g||)``, ``||eps|| ~ rho / sqrt(beta)``): our earlier reading of
  the paper, kept under its name.
* Sharpness-sensitive data selection (SDS): the second gradient is taken only on the examples
  whose loss rises most under the perturbation, ``L_i(theta + eps) - L_i(theta)``. As the
  official code: with ``k = int(gamma * n)`` the examples whose rise is strictly above the
  k-th largest rise (``k - 1`` of them without ties); ``gamma >= 0.99`` keeps the whole batch.
  The perturbed losses come from a no-grad forward pass of the whole batch, then the selected
  examples are forwarded again with gradients.

SDS needs per-example losses, so it runs when the closure accepts ``indices`` and
``reduction`` (see :class:`~sharpness.optim.closures.BatchClosure`); with a plain closure only
SWP runs and ``diagnostics["sds"]`` is 0. The masks come from the optimizer's seeded
generator. This reproduces ESAM's update rule; it does not reproduce its compute savings (the
full gradient is still computed, then masked). BatchNorm statistics are updated in every pass
(``bn_second_pass = "update"``): the official loop keeps the model in train mode. Defaults
``beta = 0.6``, ``gamma = 0.5`` are the official ``run.sh`` values for ResNet-18 on CIFAR.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sharpness.optim.base import Closure, SharpnessOptimizer
from sharpness.optim.closures import supports_selection

#: ESAM's guard on the gradient norm (dydjw9/Efficient_SAM ``utils/Esam.py``:
#: ``rho / (grad_norm + 1e-7) / beta``)
ESAM_NORM_GUARD = 1e-7


class ESAM(SharpnessOptimizer, optimizer="esam"):
    """Efficient SAM: random coordinate subset of the perturbation + loss-rise data selection."""

    def _setup(self) -> None:
        self._clean_losses: Tensor | None = None
        self.last_masks: list[Tensor] = []
        self.last_selection: Tensor | None = None

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        beta = self.hparams["beta"]
        if self.hparams["swp"] == "coordinate":
            scale = self.hparams["rho"] / (grad_norm + ESAM_NORM_GUARD) / beta
            self.last_masks = [
                (torch.rand(g.shape, generator=self.generator, device=g.device) < beta).to(g.dtype)
                for g in grads
            ]
            return [g * m * scale for g, m in zip(grads, self.last_masks, strict=True)]
        # whole tensors; the first step keeps all (the official masks are drawn after a step)
        if self.step_count == 0:
            keep = torch.ones(len(grads), dtype=torch.bool)
        else:
            draws = torch.rand(len(grads), generator=self.generator, device=self.generator.device)
            keep = (draws < beta).cpu()
        kept = [g for g, k in zip(grads, keep.tolist(), strict=True) if k]
        norm = self._global_norm(kept)
        self.diagnostics["kept_tensors"] = float(keep.sum())
        scale = self.hparams["rho"] / (norm + ESAM_NORM_GUARD) / beta
        self.last_masks = [torch.full_like(g, float(k)) for g, k in zip(grads, keep.tolist(), strict=True)]
        return [g * scale if k else torch.zeros_like(g)
                for g, k in zip(grads, keep.tolist(), strict=True)]

    @staticmethod
    def select(rise: Tensor, gamma: float) -> Tensor:
        """Indices of the examples SDS keeps, as the official code picks them.

        ``gamma >= 0.99`` keeps all; otherwise ``k = int(gamma * n)`` and the examples whose
        rise is strictly greater than the k-th largest (at least one example is kept).
        """
        n = rise.numel()
        if gamma >= 0.99:
            return torch.arange(n, device=rise.device)
        k = max(1, int(n * gamma))
        cutoff = torch.topk(rise, k).values[-1]
        selection = torch.nonzero(rise > cutoff).flatten()
        if selection.numel() == 0:
            selection = torch.topk(rise, 1).indices
        return selection

    def _clean_pass(self, closure: Closure) -> Any:
        if supports_selection(closure):
            losses = closure(reduction="none")
            self._clean_losses = losses.detach()
            return losses.mean()
        self._clean_losses = None
        return closure()

    def _perturbed_pass(self, closure: Closure) -> Any:
        if self._clean_losses is None:
            self.diagnostics["sds"] = 0.0
            self.last_selection = None
            return closure()
        with torch.no_grad():
            perturbed = closure(reduction="none", backward=False)
        rise = perturbed.detach() - self._clean_losses
        selection = self.select(rise, self.hparams["gamma"])
        self.last_selection = selection
        self.diagnostics["sds"] = 1.0
        self.diagnostics["selected_fraction"] = selection.numel() / rise.numel()
        closure(indices=selection)
        self._clean_losses = None
        return perturbed.mean()
