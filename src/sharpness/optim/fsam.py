"""F-SAM: Li, Zhou, He, Cheng, Huang, "Friendly Sharpness-Aware Minimization", CVPR 2024.

The paper finds that the full-gradient component of SAM's perturbation does not help
generalization and removes it, estimating the full gradient by an exponential moving average
``m`` of past batch gradients. As in the authors' code (nblt/F-SAM), per step:

    d_t = g_t - sigma * m_{t-1}                      (d_0 = g_0)
    m_t = lmbda * m_{t-1} + (1 - lmbda) * g_t        (m_0 = g_0)
    eps_t = rho * d_t / ||d_t||_2

Defaults ``sigma = 1``, ``lmbda = 0.9`` are the defaults of the authors' ``FriendlySAM`` class;
their ``run.sh`` (CIFAR-100, ResNet-18) uses ``rho = 0.2``, ``sigma = 1``, ``lmbda = 0.6``.
``sigma`` here is F-SAM's coefficient, not LE-SAM's loss budget. BatchNorm statistics are frozen
in the perturbed pass (``bn_second_pass = "freeze"``), as the official ``train.py`` does.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sharpness.optim.base import NORM_GUARD, SharpnessOptimizer


class FriendlySAM(SharpnessOptimizer, optimizer="fsam"):
    """F-SAM: perturb along the batch gradient minus its running average (EMA)."""

    def _setup(self) -> None:
        self._ema: dict[int, Tensor] = {}  # index into the flat parameter list -> m

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        sigma, lmbda = self.hparams["sigma"], self.hparams["lmbda"]
        index = {id(p): i for i, p in enumerate(self._all_params)}
        directions = []
        for p, g in zip(params, grads, strict=True):
            i = index[id(p)]
            m = self._ema.get(i)
            if m is None:
                directions.append(g.clone())
                self._ema[i] = g.detach().clone()
            else:
                directions.append(g - sigma * m)
                m.mul_(lmbda).add_(g, alpha=1 - lmbda)
        norm = self._global_norm(directions)
        self.diagnostics["d_norm"] = float(norm)
        scale = self.hparams["rho"] / (norm + NORM_GUARD)
        return torch._foreach_mul(directions, scale) if directions else []

    def _extra_state(self) -> dict[str, Any]:
        return {"ema": {i: m.clone() for i, m in self._ema.items()}}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        params = self._all_params
        self._ema = {int(i): m.to(params[int(i)]).clone() for i, m in state["ema"].items()}
