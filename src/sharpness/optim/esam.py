"""ESAM: Du, Yan, Feng, Zhou, Zhen, Goh, Tan, "Efficient Sharpness-aware Minimization for
Improved Training of Neural Networks", ICLR 2022.

Two changes to SAM:

* Stochastic weight perturbation (SWP): each coordinate of the SAM perturbation is kept with
  probability ``beta`` (Bernoulli mask ``m``) and rescaled by ``1/beta`` so that it is unbiased:
  ``eps = m * rho g / (beta ||g||_2)``.
* Sharpness-sensitive data selection (SDS): the second gradient is taken only on the
  ``ceil(gamma * n)`` examples of the batch whose loss rises most under the perturbation,
  ``L_i(theta + eps) - L_i(theta)``.

SDS needs per-example losses, so it runs when the closure accepts ``indices`` and
``reduction`` (see :class:`~sharpness.optim.closures.BatchClosure`); with a plain closure only
SWP runs and ``diagnostics["sds"]`` is 0. The masks come from the optimizer's seeded
generator. This reproduces ESAM's update rule; it does not reproduce its compute savings (the
full gradient is still computed, then masked). Paper defaults: ``beta = 0.6``,
``gamma = 0.5``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from torch import Tensor

from sharpness.optim.base import _TINY, Closure, SharpnessOptimizer
from sharpness.optim.closures import supports_selection


class ESAM(SharpnessOptimizer):
    """Efficient SAM: random coordinate subset of the perturbation + loss-rise data selection."""

    name: ClassVar[str] = "esam"
    hparam_defaults: ClassVar[dict[str, Any]] = {"rho": 0.05, "beta": 0.6, "gamma": 0.5}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clean_losses: Tensor | None = None
        self.last_masks: list[Tensor] = []
        self.last_selection: Tensor | None = None

    def _validate(self) -> None:
        super()._validate()
        for key in ("beta", "gamma"):
            if not 0 < self.hparams[key] <= 1:
                raise ValueError(
                    f"optimizer 'esam': {key} must be in (0, 1], got {self.hparams[key]}"
                )

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        beta = self.hparams["beta"]
        scale = self.hparams["rho"] / (beta * (grad_norm + _TINY))
        self.last_masks = [
            (torch.rand(g.shape, generator=self.generator, device=g.device) < beta).to(g.dtype)
            for g in grads
        ]
        return [g * m * scale for g, m in zip(grads, self.last_masks, strict=True)]

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
        keep = max(1, math.ceil(self.hparams["gamma"] * rise.numel()))
        selection = torch.topk(rise, keep).indices
        self.last_selection = selection
        self.diagnostics["sds"] = 1.0
        self.diagnostics["selected_fraction"] = keep / rise.numel()
        closure(indices=selection)
        self._clean_losses = None
        return perturbed.mean()
