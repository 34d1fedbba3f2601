"""LE-SAM: Loss-Equated SAM (paper 002: Wang, Liu, Xie, Gao, "Fix the Loss, Not the Radius:
Rethinking the Adversarial Perturbation of Sharpness-Aware Minimization", ICML 2026).

Instead of a fixed radius, LE-SAM fixes the first-order loss rise to a budget ``sigma_t``:

    rho_t = min(sigma_t / (||g||_2 + varrho), rho_max),    eps_t = rho_t * g / ||g||_2,

so ``<g, eps_t> = sigma_t * ||g|| / (||g|| + varrho) ~= sigma_t`` whenever the clip is inactive,
and the training signal left is the curvature term ``0.5 eps^T H eps``. The radius clip
``rho_max`` guards against huge radii when the gradient is small; ``sigma_t`` follows
:class:`~sharpness.optim.schedules.SigmaSchedule` (warm-up, constant, cosine anneal to 0).
Defaults ``sigma = 0.35``, ``rho_max = 0.3``, ``varrho = 1e-12`` are those seen in the public
code (catalog); the warm-up and anneal fractions are ours.

Extra diagnostics: ``sigma`` (the budget of this step), ``rho_t`` and ``clipped`` (1.0 when
``rho_max`` was active).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from sharpness.optim.base import _TINY, SharpnessOptimizer
from sharpness.optim.schedules import SigmaSchedule


class LESAM(SharpnessOptimizer):
    """Loss-equated SAM; needs ``total_steps`` for its sigma schedule."""

    name: ClassVar[str] = "lesam"
    hparam_defaults: ClassVar[dict[str, Any]] = {
        "sigma": 0.35,
        "rho_max": 0.3,
        "varrho": 1e-12,
        "warmup_frac": 0.1,
        "anneal_frac": 0.2,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.total_steps is None:
            raise ValueError("optimizer 'lesam' needs total_steps for its sigma schedule")
        self.schedule = SigmaSchedule(
            self.hparams["sigma"],
            self.total_steps,
            warmup_frac=self.hparams["warmup_frac"],
            anneal_frac=self.hparams["anneal_frac"],
        )

    def _validate(self) -> None:
        super()._validate()
        rho_max, varrho = self.hparams["rho_max"], self.hparams["varrho"]
        if rho_max is not None and rho_max <= 0:
            raise ValueError(f"optimizer 'lesam': rho_max must be positive or None, got {rho_max}")
        if varrho < 0:
            raise ValueError(f"optimizer 'lesam': varrho must be non-negative, got {varrho}")

    def radius(self, grad_norm: float, sigma: float) -> tuple[float, bool]:
        """``(rho_t, clipped)`` for a gradient norm and a budget."""
        rho = sigma / (grad_norm + self.hparams["varrho"]) if sigma > 0 else 0.0
        rho_max = self.hparams["rho_max"]
        if rho_max is not None and rho > rho_max:
            return float(rho_max), True
        return rho, False

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        sigma = self.schedule.current()
        norm = float(grad_norm)
        rho, clipped = self.radius(norm, sigma)
        self.diagnostics.update(sigma=sigma, rho_t=rho, clipped=float(clipped))
        scale = rho / (norm + _TINY) if norm > 0 else 0.0
        return torch._foreach_mul(grads, scale) if grads else []

    def _after_step(self) -> None:
        self.schedule.step()

    def _extra_state(self) -> dict[str, Any]:
        return {"schedule": self.schedule.state_dict()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.schedule.load_state_dict(state["schedule"])
