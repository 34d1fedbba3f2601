"""The wrapper every optimizer of :mod:`sharpness.optim` shares.

A :class:`SharpnessOptimizer` wraps a base ``torch.optim`` optimizer (which owns the learning
rate, momentum and weight decay) and adds the two-pass step of sharpness-aware minimization
(Foret et al., ICLR 2021; the first/second-step split follows the widely used davda54/sam
interface):

0. ``_before_clean_pass``: work an official loop does on the batch before its clean pass
   (Eigen-SAM's eigenvector refresh, RitianLuo/EigenSAM ``train.py``: BatchNorm's running
   statistics have not yet seen the batch),
1. clean pass at ``theta``: ``g = grad L(theta)`` (BatchNorm running statistics updated),
2. ``first_step``: compute the perturbation ``eps`` from ``g`` (the subclass's rule), save
   ``theta``, move to ``theta + eps``,
3. perturbed pass: ``grad L(theta + eps)`` on the same batch; BatchNorm running statistics
   are frozen (``bn_second_pass = "freeze"``: davda54/sam's ``disable_running_stats``, used by
   F-SAM and Eigen-SAM) or updated again (``"update"``: the official loops of ASAM, ESAM and
   LE-SAM, which keep the model in train mode for both passes). Each optimizer's default is
   its official loop's (:attr:`SharpnessOptimizer.hparam_defaults`),
4. ``second_step``: restore ``theta`` exactly (copy, not subtraction) and let the base
   optimizer step with the perturbed gradient.

Plain GD/SGD is the same object with one pass and ``eps = 0``, so that training code, logs and
checkpoints are identical across optimizers.

After each step :attr:`diagnostics` holds floats for the logs: ``loss`` (clean), ``grad_norm``
(``||g||_2`` over all parameters), ``radius`` (``||eps||_2``), ``g_dot_eps`` (first-order loss
rise ``<g, eps>``), ``perturbed_loss`` (``L(theta + eps)`` as the closure returned it), plus
optimizer-specific entries.

``steps_per_epoch`` (given by the training engine) lets an optimizer follow an official loop
that counts in epochs: LE-SAM's per-epoch sigma schedule, Eigen-SAM's in-epoch refresh step.

Randomness (ESAM's masks, Eigen-SAM's start vector) comes from the optimizer's own
``torch.Generator`` seeded by ``seed``, saved in :meth:`state_dict`: a resumed run continues
bit-identically.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from sharpness.curvature.modes import frozen_bn_stats
from sharpness.optim.eager import EagerOptimizerMixin
from sharpness.optim.spec import OptimizerSpec, optimizer_spec

Closure = Callable[..., Any]
#: the guard added to a gradient norm before dividing by it, where the method's own code uses
#: 1e-12 (davda54/sam, nblt/F-SAM, RitianLuo/EigenSAM, smithgun2005/LE-SAM-ICML2026); ESAM
#: (1e-7) and ASAM (1e-16) define their own in their modules
NORM_GUARD = 1e-12


def _to_float(value: Any) -> float:
    if isinstance(value, Tensor):
        return float(value.detach().float().mean()) if value.numel() != 1 else float(value.detach())
    return float(value)


class SharpnessOptimizer(EagerOptimizerMixin, torch.optim.Optimizer):
    """Base class: a two-pass (SAM-type) or one-pass (SGD) wrapper around ``base_optimizer``.

    Its ``zero_grad`` and ``add_param_group`` skip torch's dynamo wrappers
    (:mod:`sharpness.optim.eager`), so a training job never imports ``torch._dynamo``.

    Subclasses name their entry of ``optimizers.yaml`` as a class keyword (``class
    SAM(SharpnessOptimizer, optimizer="sam")``; :attr:`spec`, :attr:`name`,
    :attr:`hparam_defaults` and :attr:`two_pass` follow from it) and implement
    :meth:`_perturbation`; state of their own they build in :meth:`_setup`.
    Its hyper-parameters are its spec's :meth:`~sharpness.optim.spec.OptimizerSpec.resolve`
    of those given: unknown ones and values the spec does not accept raise ``ValueError``
    naming them. ``resolved`` (instead of keywords) are hyper-parameters resolved already, as
    a validated run config holds them (:func:`sharpness.train.validate_config`): taken as
    they are, so the spec resolves them once on any path, here only for a caller that
    passes its own.
    """

    name: ClassVar[str] = "base"
    hparam_defaults: ClassVar[dict[str, Any]] = {}
    two_pass: ClassVar[bool] = True
    #: the optimizer's declaration (``optimizers.yaml``); sets the three attributes above
    spec: ClassVar[OptimizerSpec | None] = None

    def __init_subclass__(cls, optimizer: str | None = None, **kwargs: Any) -> None:
        """``class X(SharpnessOptimizer, optimizer="<name>")``: the class takes its spec, name,
        defaults and pass count from the ``<name>`` entry of ``optimizers.yaml``."""
        super().__init_subclass__(**kwargs)
        if optimizer is not None:
            cls.spec = optimizer_spec(optimizer)
            cls.name = cls.spec.name
            cls.hparam_defaults = cls.spec.defaults
            cls.two_pass = cls.spec.passes_per_step > 1

    def __init__(
        self,
        model: nn.Module,
        base_optimizer: torch.optim.Optimizer,
        *,
        seed: int = 0,
        total_steps: int | None = None,
        steps_per_epoch: int | None = None,
        resolved: Mapping[str, Any] | None = None,
        **hparams: Any,
    ) -> None:
        self.hparams: dict[str, Any] = self._settings(resolved, hparams)
        self.model = model
        self.base_optimizer = base_optimizer
        self.total_steps = total_steps
        if steps_per_epoch is not None and steps_per_epoch < 1:
            raise ValueError(f"optimizer {self.name!r}: steps_per_epoch must be >= 1, "
                             f"got {steps_per_epoch}")
        self.steps_per_epoch = steps_per_epoch
        self.seed = int(seed)
        super().__init__(base_optimizer.param_groups, dict(base_optimizer.defaults))
        self.param_groups = base_optimizer.param_groups
        device = self._all_params[0].device if self._all_params else torch.device("cpu")
        self.generator = torch.Generator(device=device).manual_seed(self.seed)
        self.step_count = 0
        self.diagnostics: dict[str, float] = {}
        self._backup: list[Tensor] | None = None
        self._perturbed_params: list[Tensor] = []
        self.last_eps: list[Tensor] = []
        self._last_eps_params: list[Tensor] = []
        self._setup()

    def _settings(self, resolved: Mapping[str, Any] | None, hparams: dict[str, Any]
                  ) -> dict[str, Any]:
        """The hyper-parameters: ``resolved`` as they are, else the spec's resolve of
        ``hparams`` (the one call that resolves them for a caller outside a run config)."""
        if resolved is not None:
            if hparams:
                raise ValueError(f"optimizer {self.name!r}: hyper-parameters given both "
                                 f"resolved and as keywords ({', '.join(sorted(hparams))})")
            return dict(resolved)
        if self.spec is None:
            if hparams:
                raise ValueError(f"optimizer {self.name!r}: unknown hyper-parameter(s) "
                                 f"{', '.join(sorted(hparams))} (known: none)")
            return {}
        return self.spec.resolve(hparams)

    # -- to be specialised ---------------------------------------------------------------
    def _setup(self) -> None:
        """Build the subclass's own state once the hyper-parameters are checked (EMA buffers,
        eigenvector, schedules); ``self.model``, ``self.hparams`` and the step counters are set."""

    def _perturbation(
        self, params: list[Tensor], grads: list[Tensor], grad_norm: Tensor
    ) -> list[Tensor]:
        """``eps`` for each parameter that has a gradient (new tensors, not views of grads)."""
        raise NotImplementedError

    def _extra_state(self) -> dict[str, Any]:
        """Subclass state for checkpoints (EMA buffers, eigenvectors, schedules)."""
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        del state

    def _before_clean_pass(self, closure: Closure) -> None:
        """Hook before the clean pass, gradients zeroed (Eigen-SAM's eigenvector refresh)."""
        del closure

    def _clean_pass(self, closure: Closure) -> Any:
        return closure()

    def _perturbed_pass(self, closure: Closure) -> Any:
        return closure()

    # -- helpers ---------------------------------------------------------------------------
    @property
    def _all_params(self) -> list[Tensor]:
        return [p for group in self.param_groups for p in group["params"]]

    def _params_with_grad(self) -> tuple[list[Tensor], list[Tensor]]:
        params = [p for p in self._all_params if p.grad is not None]
        return params, [p.grad for p in params]  # type: ignore[misc]

    @staticmethod
    def _global_norm(tensors: list[Tensor]) -> Tensor:
        if not tensors:
            return torch.zeros(())
        return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(tensors)))

    @staticmethod
    def _dot(a: list[Tensor], b: list[Tensor]) -> Tensor:
        if not a:
            return torch.zeros(())
        return torch.stack([(x * y).sum() for x, y in zip(a, b, strict=True)]).sum()

    # -- the step ---------------------------------------------------------------------------
    @torch.no_grad()
    def first_step(self, zero_grad: bool = False) -> None:
        """From the gradients in ``.grad``: record diagnostics, perturb to ``theta + eps``."""
        params, grads = self._params_with_grad()
        grad_norm = self._global_norm(grads)
        self.diagnostics["grad_norm"] = float(grad_norm)
        if not self.two_pass:
            self.diagnostics.update(radius=0.0, g_dot_eps=0.0)
            self.last_eps, self._last_eps_params = [], []
            return
        eps = self._perturbation(params, grads, grad_norm)
        self.diagnostics["radius"] = float(self._global_norm(eps))
        self.diagnostics["g_dot_eps"] = float(self._dot(grads, eps))
        self.last_eps = eps
        self._last_eps_params = params
        self._perturbed_params = params
        self._backup = [p.detach().clone() for p in params]
        if params:
            torch._foreach_add_(params, eps)
        if zero_grad:
            self.zero_grad(set_to_none=True)

    @torch.no_grad()
    def second_step(self, zero_grad: bool = False) -> None:
        """Restore ``theta`` exactly and take the base optimizer's step with the current grads."""
        if self._backup is not None:
            torch._foreach_copy_(self._perturbed_params, self._backup)
            self._backup = None
            self._perturbed_params = []
        self._before_base_step()
        self.base_optimizer.step()
        self.step_count += 1
        self._after_step()
        if zero_grad:
            self.zero_grad(set_to_none=True)

    def _after_step(self) -> None:
        """Hook after the base step (LE-SAM advances its schedule)."""

    def _before_base_step(self) -> None:
        """Hook after ``theta`` is restored, before the base step (LE-SAM's ``alpha``)."""

    @property
    def epoch(self) -> int:
        """The 0-based epoch of the current step (``step_count`` when no epoch length is set)."""
        return self.step_count // self.steps_per_epoch if self.steps_per_epoch else self.step_count

    def _second_pass_context(self) -> Any:
        """BatchNorm handling of the perturbed pass (``bn_second_pass``)."""
        if self.hparams.get("bn_second_pass", "freeze") == "update":
            return contextlib.nullcontext()
        return frozen_bn_stats(self.model)

    def step(self, closure: Closure | None = None) -> Tensor:  # type: ignore[override]
        """One full step on the batch the closure evaluates; returns the clean loss.

        The closure must re-evaluate the loss on the same batch and call ``backward``; the
        optimizer zeroes gradients itself.
        """
        if closure is None:
            raise ValueError(f"optimizer {self.name!r} needs a closure that re-evaluates the loss")
        self.diagnostics = {}
        self.zero_grad(set_to_none=True)
        self._before_clean_pass(closure)
        self.zero_grad(set_to_none=True)
        with torch.enable_grad():
            loss = self._clean_pass(closure)
        self.diagnostics["loss"] = _to_float(loss)
        self.first_step(zero_grad=self.two_pass)
        if self.two_pass:
            with self._second_pass_context(), torch.enable_grad():
                perturbed = self._perturbed_pass(closure)
            if perturbed is not None:
                self.diagnostics["perturbed_loss"] = _to_float(perturbed)
        self.second_step(zero_grad=False)
        return loss

    def perturbation_vector(self) -> Tensor:
        """The last step's ``eps`` as one flat vector over all parameters (0 where no grad).

        Its order is that of the optimizer's parameters, which for :func:`build_optimizer` is
        ``model.parameters()`` restricted to trainable ones: the order of
        :class:`sharpness.curvature.HessianOperator`, so ``curvature_term(op, opt.perturbation_vector())``
        gives ``0.5 eps^T H eps`` for the ``fig_signal`` item.
        """
        eps_of = {id(p): e for p, e in zip(self._last_eps_params, self.last_eps, strict=True)}
        return torch.cat(
            [eps_of.get(id(p), torch.zeros_like(p)).reshape(-1) for p in self._all_params]
        )

    # -- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:  # type: ignore[override]
        """Everything needed for an exact resume: base optimizer, counters, RNG, extra state."""
        return {
            "name": self.name,
            "hparams": dict(self.hparams),
            "base": self.base_optimizer.state_dict(),
            "step_count": self.step_count,
            "generator": self.generator.get_state(),
            "extra": self._extra_state(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:  # type: ignore[override]
        if state_dict.get("name") != self.name:
            raise ValueError(
                f"state dict is for optimizer {state_dict.get('name')!r}, not {self.name!r}"
            )
        self.base_optimizer.load_state_dict(state_dict["base"])
        self.param_groups = self.base_optimizer.param_groups
        self.step_count = int(state_dict["step_count"])
        self.generator.set_state(state_dict["generator"])
        self._load_extra_state(state_dict["extra"])

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in self.hparams.items())
        return f"{type(self).__name__}({settings}; base={type(self.base_optimizer).__name__})"
