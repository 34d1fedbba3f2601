"""Eigen-SAM: Luo et al., "Explicit Eigenvalue Regularization Improves Sharpness-Aware
Minimization", NeurIPS 2024.

SAM's implicit regularization of the top Hessian eigenvalue depends on how well the
perturbation aligns with the top eigenvector ``v``. Eigen-SAM estimates ``v`` by power
iteration (warm-started from the previous estimate) and adds the part of ``v`` orthogonal to
the gradient to the perturbation. As the official code (RitianLuo/EigenSAM ``train.py`` and
``utils.py``):

    g_hat = g / ||g||,   v_perp = v - <v, g_hat> g_hat   (v unit norm; v_perp not renormalized),
    eps = rho * (g_hat + alpha * sign(<g, v>) * v_perp)  (first_step with normalization=False)

so ``||eps|| = rho sqrt(1 + alpha^2 ||v_perp||^2)``. Before the first estimate the official loop
calls the same unnormalized first step on the raw gradient, ``eps = rho * g``.

* ``v`` is refreshed on the step's batch when the step's index *within its epoch* is a
  positive multiple of ``eig_every`` (official ``step % freq == 0 and step > 0``; with
  ``steps_per_epoch`` unset, the global step count is used), with ``power_iters`` iterations
  (official 5), the model in **eval mode** (``model.eval()`` in ``estimate_largest_eigenvector``:
  BatchNorm normalizes with its running statistics, dropout off). The refresh runs **before the
  step's clean pass**, as the official loop calls it, so those running statistics have not yet
  seen this batch. ``eig_mode = "train"`` keeps train mode with frozen running statistics (our
  earlier choice, kept as an option).
* The power iteration is the official one: from a Gaussian start (the optimizer's generator),
  ``v <- H v / sqrt(||H v||^2 + 1e-12)``, ``power_iters`` times, no early stop.
* ``direction = "normalized"`` renormalizes ``v_perp`` and the direction to length ``rho``
  (our earlier reading, kept as an option); ``"official"`` is the default.
* BatchNorm statistics are frozen in the perturbed pass (``bn_second_pass = "freeze"``, the
  official ``disable_running_stats``).

The Hessian-vector products use the closure: exact double backward when it has a ``loss()``
method (:class:`~sharpness.optim.closures.BatchClosure`), else central finite differences of
the gradient with step ``fd_step``. Defaults (``rho = 0.05`` aside) are those of the official
README command for CIFAR-100 (``--alpha 0.2 --freq 100``). Extra diagnostics: ``eig_estimate``
(Rayleigh quotient of the current ``v``, on the step it was refreshed) and ``v_alignment``
(``|<v, g_hat>|``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sharpness.curvature.hvp import flatten, hvp_from_loss, unflatten
from sharpness.curvature.modes import model_mode
from sharpness.optim.base import NORM_GUARD, Closure, SharpnessOptimizer

#: the official power iteration's guard, inside the square root: ``v / sqrt(||v||^2 + 1e-12)``
#: (RitianLuo/EigenSAM ``utils.py`` ``normalization``)
POWER_GUARD = 1e-12


class EigenSAM(SharpnessOptimizer, optimizer="eigensam"):
    """SAM with the perturbation tilted toward the top Hessian eigenvector (official rule)."""

    def _setup(self) -> None:
        self.eigenvector: Tensor | None = None  # flat, unit norm, over all parameters
        self.eigenvalue: float | None = None

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
        """Refresh the top-eigenvector estimate on the closure's batch; returns the eigenvalue.

        The eigenvalue is the Rayleigh quotient of the last iterate before the final product
        (a diagnostic; the official code computes none). Gradients are left as they were.
        """
        params = self._all_params
        saved = [None if p.grad is None else p.grad.detach().clone() for p in params]
        with model_mode(self.model, self.hparams["eig_mode"]):
            product = self._hvp(closure)
            if self.eigenvector is None:
                v = torch.randn(sum(p.numel() for p in params), generator=self.generator,
                                device=params[0].device, dtype=params[0].dtype)
            else:
                v = self.eigenvector
            eigenvalue = float("nan")
            for _ in range(self.hparams["power_iters"]):
                hv = product(v).detach()
                eigenvalue = float(torch.dot(v, hv) / torch.dot(v, v))
                v = hv / torch.sqrt((hv * hv).sum() + POWER_GUARD)
        for p, g in zip(params, saved, strict=True):
            p.grad = g
        self.eigenvector = v.detach()
        self.eigenvalue = eigenvalue
        self.diagnostics["eig_estimate"] = eigenvalue
        return eigenvalue

    def refresh_due(self) -> bool:
        """Whether this step refreshes ``v`` (official: in-epoch step, positive multiple)."""
        every = self.hparams["eig_every"]
        if self.hparams["eig_schedule"] == "global":
            return self.step_count % every == 0
        step = self.step_count % self.steps_per_epoch if self.steps_per_epoch else self.step_count
        return step > 0 and step % every == 0

    def _before_clean_pass(self, closure: Closure) -> None:
        if self.refresh_due():
            self.update_eigenvector(closure)

    # -- perturbation --------------------------------------------------------------------
    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        rho, alpha = self.hparams["rho"], self.hparams["alpha"]
        official = self.hparams["direction"] == "official"
        if not grads:
            return []
        if self.eigenvector is None:
            # official: first_step(normalization=False) on the unmodified gradient
            return torch._foreach_mul(grads, rho if official else rho / (grad_norm + NORM_GUARD))
        all_params = self._all_params
        has_grad = {id(p) for p in params}
        grad_of = {id(p): g for p, g in zip(params, grads, strict=True)}
        g_flat = flatten(
            [grad_of[id(p)] if id(p) in has_grad else torch.zeros_like(p) for p in all_params]
        )
        g_hat = g_flat / (grad_norm + NORM_GUARD)
        v = self.eigenvector
        cos = torch.dot(v, g_hat)
        self.diagnostics["v_alignment"] = float(cos.abs())
        v_perp = v - cos * g_hat
        if official:
            eps_flat = rho * (g_hat + alpha * torch.sign(cos) * v_perp)
        else:
            v_perp = v_perp / (v_perp.norm() + NORM_GUARD)
            direction = g_hat + alpha * torch.sign(cos) * v_perp
            eps_flat = direction * (rho / (direction.norm() + NORM_GUARD))
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
