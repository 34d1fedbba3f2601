"""Closures: how an optimizer re-evaluates the loss on the same batch.

Every optimizer in :mod:`sharpness.optim` takes a plain closure, as ``torch.optim`` does::

    def closure():
        loss = criterion(model(x), y)
        loss.backward()
        return loss

Two optimizers can do more when the closure can do more, and :class:`BatchClosure` is the
closure that can:

* ESAM's sharpness-sensitive data selection needs per-example losses and a backward pass on a
  subset of the batch: ``closure(indices=None, reduction="mean", backward=True)``. A closure
  accepting the keywords ``indices`` and ``reduction`` is detected and used that way; a plain
  closure makes ESAM fall back to its weight-perturbation part only (and says so in its
  diagnostics, ``sds = 0``).
* Eigen-SAM's power iteration needs Hessian-vector products on the batch; a closure with a
  ``loss()`` method (the mean loss with its graph, no backward) gives exact double-backward
  products, a plain one central finite differences of the gradient.

``BatchClosure`` also keeps the outputs of its first call (the clean pass) so that a training
loop can compute accuracy without another forward pass.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from torch import Tensor, nn
from torch.nn import functional as F

PerExampleLoss = Callable[[Tensor, Tensor], Tensor]


def _cross_entropy_per_example(outputs: Tensor, targets: Tensor) -> Tensor:
    return F.cross_entropy(outputs, targets, reduction="none")


class BatchClosure:
    """Closure over one batch ``(inputs, targets)``; ``loss_fn`` returns per-example losses.

    ``closure()`` is a plain closure (mean loss, backward). ``closure(indices=idx)`` restricts
    to a subset of the batch; ``reduction="none"`` returns the per-example losses (detached),
    still back-propagating their mean when ``backward=True``.
    """

    def __init__(
        self,
        model: nn.Module,
        inputs: Tensor,
        targets: Tensor,
        loss_fn: PerExampleLoss | None = None,
    ) -> None:
        self.model = model
        self.inputs = inputs
        self.targets = targets
        self.loss_fn = loss_fn or _cross_entropy_per_example
        self.clean_outputs: Tensor | None = None
        self.calls = 0

    def _forward(self, indices: Tensor | None) -> Tensor:
        inputs = self.inputs if indices is None else self.inputs[indices]
        targets = self.targets if indices is None else self.targets[indices]
        outputs = self.model(inputs)
        if self.clean_outputs is None and indices is None:
            self.clean_outputs = outputs.detach()
        losses = self.loss_fn(outputs, targets)
        if losses.dim() != 1:
            raise ValueError("loss_fn must return one loss per example (reduction='none')")
        return losses

    def __call__(
        self, indices: Tensor | None = None, reduction: str = "mean", backward: bool = True
    ) -> Tensor:
        """Evaluate the (sub-)batch loss; back-propagate its mean if ``backward``."""
        if reduction not in ("mean", "none"):
            raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")
        self.calls += 1
        losses = self._forward(indices)
        loss = losses.mean()
        if backward:
            loss.backward()
        return losses.detach() if reduction == "none" else loss.detach()

    def losses_with_graph(self) -> Tensor:
        """Per-example losses of the whole batch with their graph (no backward): LE-SAM's
        ``topk`` back-propagates the mean of the largest ones from the same forward pass."""
        self.calls += 1
        return self._forward(None)

    def loss(self) -> Tensor:
        """Mean loss of the whole batch with its graph (no backward): for Hessian products.

        It never becomes :attr:`clean_outputs` (Eigen-SAM calls it before the clean pass)."""
        kept = self.clean_outputs
        loss = self._forward(None).mean()
        self.clean_outputs = kept
        return loss


def supports_selection(closure: Any) -> bool:
    """Whether ``closure`` takes ``indices`` and ``reduction`` (ESAM data selection)."""
    try:
        parameters = inspect.signature(closure).parameters
    except (TypeError, ValueError):
        return False
    return "indices" in parameters and "reduction" in parameters
