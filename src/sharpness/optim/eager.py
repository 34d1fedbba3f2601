"""``torch.optim`` without importing ``torch._dynamo`` on the eager path.

In torch 2.14 every built-in optimizer's ``step`` is wrapped in
``torch.optim.optimizer._use_grad_for_differentiable``, and ``Optimizer.add_param_group``
(called by every constructor), ``zero_grad``, ``state_dict`` and ``load_state_dict`` in
``torch._disable_dynamo``. Both wrappers import ``torch._dynamo`` (which pulls
``torch._inductor``: about as much CPU as ``import torch`` itself) on their first call, only to
insert graph breaks (``torch._dynamo.graph_break()`` is an empty function outside a trace) and to
switch off dynamo's frame evaluation (which nothing switched on). Every training job of a
profile paid that import for its first optimizer step.

:class:`EagerOptimizerMixin` calls the functions those wrappers wrap (``__wrapped__``, set by
``functools.wraps``) directly, doing the one thing the step wrapper does outside a trace:
grad mode set to ``defaults["differentiable"]`` and restored after. The arithmetic is the
same code on the same tensors, so results are bit-identical (``tests/optim/test_eager.py``).
When a trace is in progress (``torch.compiler.is_compiling()``, a flag read) every method
defers to torch's own wrapped one; no job of this pipeline compiles.

:func:`set_deterministic` is ``torch.use_deterministic_algorithms`` without the same import
(it imports ``torch._inductor.config`` only to copy the flag into inductor's compile settings).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import torch


def _eager(method: Any) -> Callable[..., Any]:
    """The bound ``method`` without torch's dynamo wrappers (its innermost ``__wrapped__``)."""
    return inspect.unwrap(method.__func__).__get__(method.__self__)


class EagerOptimizerMixin:
    """Put first in the bases of a ``torch.optim.Optimizer`` subclass (see the module doc)."""

    defaults: dict[str, Any]

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """``Optimizer.add_param_group`` without the dynamo import."""
        if torch.compiler.is_compiling():
            return super().add_param_group(param_group)  # type: ignore[misc]
        return _eager(super().add_param_group)(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """``Optimizer.zero_grad`` without the dynamo import."""
        if torch.compiler.is_compiling():
            return super().zero_grad(set_to_none)  # type: ignore[misc]
        return _eager(super().zero_grad)(set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """``Optimizer.state_dict`` without the dynamo import."""
        if torch.compiler.is_compiling():
            return super().state_dict()  # type: ignore[misc]
        return _eager(super().state_dict)()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """``Optimizer.load_state_dict`` without the dynamo import."""
        if torch.compiler.is_compiling():
            return super().load_state_dict(state_dict)  # type: ignore[misc]
        return _eager(super().load_state_dict)(state_dict)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """The base class's step under ``defaults["differentiable"]`` grad mode, no dynamo."""
        if torch.compiler.is_compiling():
            return super().step(closure)  # type: ignore[misc]
        prev = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(self.defaults["differentiable"])
            return _eager(super().step)(closure)
        finally:
            torch.set_grad_enabled(prev)


class SGD(EagerOptimizerMixin, torch.optim.SGD):
    """``torch.optim.SGD``, bit-identical, whose first step does not import ``torch._dynamo``."""


def set_deterministic(mode: bool, *, warn_only: bool = False) -> None:
    """``torch.use_deterministic_algorithms(mode, warn_only=warn_only)`` for eager code.

    The public call also sets ``torch._inductor.config.deterministic``, which only compiled
    code reads, and imports inductor (and dynamo) to do it; once inductor is loaded anyway the
    public call is used, so the flag stays in step for code that compiles.
    """
    if "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)
