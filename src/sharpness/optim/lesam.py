"""LE-SAM: Loss-Equated SAM (paper 002: Wang, Liu, Xie, Gao, "Fix the Loss, Not the Radius:
Rethinking the Adversarial Perturbation of Sharpness-Aware Minimization", ICML 2026).

Instead of a fixed radius, LE-SAM fixes the first-order loss rise to a budget ``sigma_t``:

    rho_t = min(sigma_t / (||g||_2 + varrho), rho_max),    eps_t = rho_t * g / ||g||_2,

so ``<g, eps_t> = sigma_t * ||g|| / (||g|| + varrho) ~= sigma_t`` whenever the clip is inactive,
and the training signal left is the curvature term ``0.5 eps^T H eps``. Everything below
follows the official code (smithgun2005/LE-SAM-ICML2026 ``lesam.py``):

* ``rho_max``: the script's default is 0.3; the README's command for CIFAR-100/ResNet-18 passes
  ``--lesam_rho_max 999`` (no clip in practice). ``None`` means no clip.
* ``sigma_t`` (``schedule = "epochs"``, official): per epoch, a linear warm-up from
  ``warmup_start`` (0) at epoch 0 to ``sigma`` at epoch ``warmup_epochs - 1`` (10 epochs), then
  ``sigma`` until ``decay_start`` (160), then ``decay`` (``cosine``; ``linear``/``none``) to
  ``sigma_min`` (0) at the last epoch: :class:`~sharpness.optim.schedules.EpochSigmaSchedule`.
  The epoch is ``step // steps_per_epoch`` (the engine passes ``steps_per_epoch``; the total
  number of epochs is ``total_steps / steps_per_epoch``). ``schedule = "fractions"`` is our
  per-step schedule with ``warmup_frac``/``anneal_frac`` of all steps
  (:class:`~sharpness.optim.schedules.SigmaSchedule`), kept for full-batch runs.
* ``adaptive`` (off): ASAM-style scaling as the official code does it, ``T = |w|`` on every
  tensor: ``||g||`` becomes ``||T g||`` and ``eps = rho_t T g / ||T g||``.
* ``topk`` (1.0 = off): both passes back-propagate the mean of the ``ceil(topk * B)`` largest
  per-example losses of the whole batch's forward pass (the perturbed pass picks its own top
  examples unless ``topk_share_indices``); needs a closure with ``losses_with_graph``
  (:class:`~sharpness.optim.closures.BatchClosure`).
* ``alpha`` (0 = off): the perturbed gradient minus ``alpha`` times the clean gradient.
* Guards as the official ``LESAM`` class, with its one constant ``eps`` (``--lesam_eps``,
  1e-12) = ``varrho``: ``||g|| = sqrt(sum g^2 + varrho)`` and both divisions by
  ``||g|| + varrho``.
* BatchNorm statistics are updated in both passes (``bn_second_pass = "update"``): the
  official loop keeps the model in train mode.

Extra diagnostics: ``sigma`` (the budget of this step), ``rho_t`` and ``clipped`` (1.0 when
``rho_max`` was active).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from sharpness.optim.base import Closure, SharpnessOptimizer
from sharpness.optim.radius import lesam_radius
from sharpness.optim.schedules import EpochSigmaSchedule, SigmaSchedule


def top_fraction(losses: Tensor, fraction: float) -> Tensor:
    """Indices of the ``ceil(fraction * B)`` largest per-example losses (official top-k)."""
    k = min(losses.numel(), max(1, math.ceil(losses.numel() * fraction - 1e-9)))
    return torch.topk(losses.detach(), k).indices


class LESAM(SharpnessOptimizer, optimizer="lesam"):
    """Loss-equated SAM with the official options; needs ``total_steps`` for its schedule."""

    def _setup(self) -> None:
        if self.total_steps is None:
            raise ValueError("optimizer 'lesam' needs total_steps for its sigma schedule")
        hp = self.hparams
        self.schedule: SigmaSchedule | None = None
        self.epoch_schedule: EpochSigmaSchedule | None = None
        if hp["schedule"] == "fractions":
            self.schedule = SigmaSchedule(hp["sigma"], self.total_steps,
                                          warmup_frac=hp["warmup_frac"],
                                          anneal_frac=hp["anneal_frac"])
        else:
            per_epoch = self.steps_per_epoch or 1
            self.epoch_schedule = EpochSigmaSchedule(
                hp["sigma"], total_epochs=max(1, math.ceil(self.total_steps / per_epoch)),
                warmup_epochs=hp["warmup_epochs"], warmup_start=hp["warmup_start"],
                decay=hp["decay"], decay_start=hp["decay_start"], sigma_min=hp["sigma_min"])
        self._clean_grads: list[Tensor | None] | None = None
        self._top_indices: Tensor | None = None

    def current_sigma(self) -> float:
        """``sigma_t`` of the current step."""
        if self.schedule is not None:
            return self.schedule.current()
        assert self.epoch_schedule is not None
        return self.epoch_schedule.value(self.epoch)

    def radius(self, grad_norm: float, sigma: float) -> tuple[float, bool]:
        """``(rho_t, clipped)`` for a gradient norm and a budget (:func:`sharpness.optim.radius.lesam_radius`)."""
        rho, clipped = lesam_radius(grad_norm, sigma, self.hparams["rho_max"],
                                    self.hparams["varrho"])
        return float(rho), bool(clipped)

    # -- passes (top-k) --------------------------------------------------------------------
    def _top_pass(self, closure: Closure, indices: Tensor | None) -> tuple[Tensor, Tensor]:
        losses_with_graph = getattr(closure, "losses_with_graph", None)
        if not callable(losses_with_graph):
            raise ValueError("optimizer 'lesam': topk < 1 needs a closure with "
                             "losses_with_graph() (sharpness.optim.BatchClosure)")
        losses = losses_with_graph()
        if indices is None:
            indices = top_fraction(losses, self.hparams["topk"])
        losses.index_select(0, indices).mean().backward()
        return losses.detach().mean(), indices

    def _clean_pass(self, closure: Closure) -> Any:
        if self.hparams["topk"] < 1:
            loss, self._top_indices = self._top_pass(closure, None)
        else:
            loss = closure()
        if self.hparams["alpha"]:
            self._clean_grads = [None if p.grad is None else p.grad.detach().clone()
                                 for p in self._all_params]
        return loss

    def _perturbed_pass(self, closure: Closure) -> Any:
        if self.hparams["topk"] < 1:
            shared = self._top_indices if self.hparams["topk_share_indices"] else None
            loss, _ = self._top_pass(closure, shared)
            return loss
        return closure()

    @torch.no_grad()
    def _before_base_step(self) -> None:
        if self._clean_grads is None:
            return
        for p, g in zip(self._all_params, self._clean_grads, strict=True):
            if p.grad is not None and g is not None:
                p.grad.add_(g, alpha=-self.hparams["alpha"])
        self._clean_grads = None

    # -- perturbation ----------------------------------------------------------------------
    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        sigma = self.current_sigma()
        if self.hparams["adaptive"]:
            scaled = [p.detach().abs() * g for p, g in zip(params, grads, strict=True)]
            grad_norm = self._global_norm(scaled)
        else:
            scaled = grads
        # the official guard (one constant, lesam_eps = varrho): ||g|| = sqrt(sum g^2 + varrho),
        # rho_t = min(sigma / (||g|| + varrho), rho_max), eps = rho_t T g / (||g|| + varrho)
        varrho = self.hparams["varrho"]
        norm = math.sqrt(float(grad_norm) ** 2 + varrho)
        rho, clipped = self.radius(norm, sigma)
        self.diagnostics.update(sigma=sigma, rho_t=rho, clipped=float(clipped))
        scale = rho / (norm + varrho) if norm > 0 else 0.0
        return torch._foreach_mul(scaled, scale) if scaled else []

    def _after_step(self) -> None:
        if self.schedule is not None:
            self.schedule.step()

    def _extra_state(self) -> dict[str, Any]:
        return {"schedule": None if self.schedule is None else self.schedule.state_dict()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        if self.schedule is not None and state.get("schedule") is not None:
            self.schedule.load_state_dict(state["schedule"])
