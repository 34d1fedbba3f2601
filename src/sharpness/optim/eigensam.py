"""Eigen-SAM: Luo et al., "Explicit Eigenvalue Regularization Improves Sharpness-Aware
Minimization", NeurIPS 2024.

SAM's implicit regularization of the top Hessian eigenvalue depends on how well the
perturbation aligns with the top eigenvector ``v``. Eigen-SAM estimates ``v`` by power
iteration every ``eig_every`` steps (warm-started from the previous estimate) and adds the part
of ``v`` orthogonal to the gradient to the perturbation direction:

    g_hat = g / ||g||,   v_perp = (v - <v, g_hat> g_hat) / ||v - <v, g_hat> g_hat||,
    d = g_hat + alpha * sign(<v, g_hat>) * v_perp,   eps = rho * d / ||d||.

(The sign keeps ``d`` on the side of ``v`` that raises the loss to first order.) Before the first
estimate, ``eps`` is SAM's. ``alpha = 0.2``, ``eig_every = 100`` and ``power_iters = 10`` are our
defaults for the quick profile.

The Hessian-vector products use the closure: exact double backward when it has a ``loss()``
method (:class:`~sharpness.optim.closures.BatchClosure`), else central finite differences of
the gradient with step ``fd_step``. BatchNorm running statistics are frozen while estimating.
Extra diagnostics: ``eig_estimate`` (Rayleigh quotient of the current ``v``, on the step it was
refreshed) and ``v_alignment`` (``|<v, g_hat>|``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from sharpness.curvature.hvp import flatten, hvp_from_loss, unflatten
from sharpness.curvature.modes import frozen_bn_stats
from sharpness.curvature.spectrum import power_iteration
from sharpness.optim.base import _TINY, Closure, SharpnessOptimizer


class EigenSAM(SharpnessOptimizer):
    """SAM with the perturbation tilted toward the top Hessian eigenvector."""

    name: ClassVar[str] = "eigensam"
    hparam_defaults: ClassVar[dict[str, Any]] = {
        "rho": 0.05,
        "alpha": 0.2,
        "eig_every": 100,
        "power_iters": 10,
        "fd_step": 1e-3,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.eigenvector: Tensor | None = None  # flat, unit norm, over all parameters
        self.eigenvalue: float | None = None

    def _validate(self) -> None:
        super()._validate()
        if self.hparams["eig_every"] < 1 or self.hparams["power_iters"] < 1:
            raise ValueError("optimizer 'eigensam': eig_every and power_iters must be >= 1")

    # -- eigenvector estimate ------------------------------------------------------------
    def _hvp(self, closure: Closure) -> Any:
        params = self._all_params
        if callable(getattr(closure, "loss", None)):
            with torch.enable_grad():
                _, product = hvp_from_loss(closure.loss(), params)
            return product
        h = self.hparams["fd_step"]

        def grad_at(vector: Tensor) -> Tensor:
            with torch.no_grad():
                torch._foreach_add_(params, unflatten(vector, params))
            self.zero_grad(set_to_none=True)
            with torch.enable_grad():
                closure()
            grads = flatten([torch.zeros_like(p) if p.grad is None else p.grad for p in params])
            with torch.no_grad():
                torch._foreach_sub_(params, unflatten(vector, params))
            return grads

        def product(vector: Tensor) -> Tensor:
            return (grad_at(h * vector) - grad_at(-h * vector)) / (2 * h)

        return product

    def update_eigenvector(self, closure: Closure) -> float:
        """Refresh the top-eigenvector estimate on the closure's batch; returns the eigenvalue."""
        params = self._all_params
        saved = [None if p.grad is None else p.grad.detach().clone() for p in params]
        with frozen_bn_stats(self.model):
            product = self._hvp(closure)
            if self.eigenvector is None:
                start = torch.randn(
                    sum(p.numel() for p in params),
                    generator=self.generator,
                    device=params[0].device,
                    dtype=params[0].dtype,
                )
            else:
                start = self.eigenvector
            result = power_iteration(
                product, start, max_iters=self.hparams["power_iters"], rtol=0.0
            )
        for p, g in zip(params, saved, strict=True):
            p.grad = g
        self.eigenvector = result.vector.detach()
        self.eigenvalue = result.eigenvalue
        self.diagnostics["eig_estimate"] = result.eigenvalue
        return result.eigenvalue

    def _before_perturbation(self, closure: Closure) -> None:
        if self.step_count % self.hparams["eig_every"] == 0:
            self.update_eigenvector(closure)

    # -- perturbation --------------------------------------------------------------------
    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        rho, alpha = self.hparams["rho"], self.hparams["alpha"]
        if self.eigenvector is None or not grads:
            return torch._foreach_mul(grads, rho / (grad_norm + _TINY)) if grads else []
        all_params = self._all_params
        has_grad = {id(p) for p in params}
        grad_of = {id(p): g for p, g in zip(params, grads, strict=True)}
        g_flat = flatten(
            [grad_of[id(p)] if id(p) in has_grad else torch.zeros_like(p) for p in all_params]
        )
        g_hat = g_flat / (grad_norm + _TINY)
        v = self.eigenvector
        cos = torch.dot(v, g_hat)
        self.diagnostics["v_alignment"] = float(cos.abs())
        v_perp = v - cos * g_hat
        v_perp = v_perp / (v_perp.norm() + _TINY)
        direction = g_hat + alpha * torch.sign(cos) * v_perp
        eps_flat = direction * (rho / (direction.norm() + _TINY))
        eps_all = unflatten(eps_flat, all_params)
        return [e.clone() for p, e in zip(all_params, eps_all, strict=True) if id(p) in has_grad]

    # -- checkpoints ---------------------------------------------------------------------
    def _extra_state(self) -> dict[str, Any]:
        return {
            "eigenvector": None if self.eigenvector is None else self.eigenvector.clone(),
            "eigenvalue": self.eigenvalue,
        }

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        vector = state["eigenvector"]
        self.eigenvector = None if vector is None else vector.to(self._all_params[0]).clone()
        self.eigenvalue = state["eigenvalue"]
