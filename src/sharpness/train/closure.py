"""The engine's batch closure: the optimizers' :class:`~sharpness.optim.BatchClosure` plus
bf16 autocast, exact chunked full-batch passes and the stop check on the clean pass."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from sharpness.optim import BatchClosure
from sharpness.runs.state import divergence
from sharpness.train.losses import Criterion


class Stop(Exception):  # noqa: N818 - control flow, not an error
    """Raised inside the closure's clean pass, before any parameter moves."""

    def __init__(self, reason: str, loss: float, why: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.loss = loss
        self.why = why  # the divergence rule's reason (sharpness.runs.state.divergence)


class DivergenceCheck:
    """The one divergence rule (:func:`sharpness.runs.state.divergence`) on a step's clean loss:
    NaN/inf, above ``factor`` x the run's initial loss, or above the absolute ``limit``.
    ``checked_loss`` keeps the loss it saw (the run's initial loss is the first one)."""

    def __init__(self, initial_loss: float | None, factor: float | None,
                 limit: float | None) -> None:
        self.initial_loss, self.factor, self.limit = initial_loss, factor, limit
        self.checked_loss: float | None = None

    def __call__(self, loss: float) -> None:
        self.checked_loss = loss
        why = divergence(loss, self.initial_loss, factor=self.factor, limit=self.limit)
        if why is not None:
            raise Stop("diverged", loss, why)



class EngineClosure(BatchClosure):
    """The optimizers' batch closure plus: bf16 autocast, exact chunked full-batch passes, and
    the stop check (divergence / loss goal) on the clean pass."""

    def __init__(self, model: nn.Module, inputs: Tensor, targets: Tensor, loss_fn: Criterion,
                 *, autocast: Callable[[], contextlib.AbstractContextManager[Any]],
                 chunk: int | None, check: DivergenceCheck,
                 loss_goal: float | None,
                 pass_context: Callable[[int], contextlib.AbstractContextManager[Any]]
                 | None = None,
                 reduce_loss: Callable[[float], float] | None = None) -> None:
        super().__init__(model, inputs, targets, loss_fn)
        self._autocast = autocast
        # DDP (sharpness.train.distributed): which passes sync gradients, the loss over ranks
        self._pass_context = pass_context
        self._reduce_loss = reduce_loss
        self._chunk = chunk
        self.check = check
        self._goal = loss_goal

    def _forward(self, indices: Tensor | None) -> Tensor:
        with self._autocast():
            return super()._forward(indices)

    def __call__(self, indices: Tensor | None = None, reduction: str = "mean",
                 backward: bool = True) -> Tensor:
        first = self.calls == 0
        sync = self._pass_context(self.calls) if self._pass_context else contextlib.nullcontext()
        with sync:
            if self._chunk is not None and indices is None and len(self.inputs) > self._chunk:
                result = self._chunked(reduction, backward)
            else:
                result = super().__call__(indices, reduction, backward)
        if first:
            loss = float(result.mean())
            if self._reduce_loss is not None:
                loss = self._reduce_loss(loss)
            self.check(loss)
            if self._goal is not None and loss < self._goal:
                raise Stop("loss_goal", loss)
        return result

    def _chunked(self, reduction: str, backward: bool) -> Tensor:
        self.calls += 1
        n = len(self.inputs)
        losses, outputs = [], []
        for start in range(0, n, self._chunk or n):
            x = self.inputs[start:start + self._chunk]
            y = self.targets[start:start + self._chunk]
            with self._autocast():
                out = self.model(x)
            part = self.loss_fn(out, y)
            if backward:
                (part.sum() / n).backward()
            losses.append(part.detach())
            outputs.append(out.detach())
        if self.clean_outputs is None:
            self.clean_outputs = torch.cat(outputs)
        all_losses = torch.cat(losses)
        return all_losses if reduction == "none" else all_losses.mean()



class CheckedClosure:
    """A custom closure (``closure() -> loss``, backward inside; a training method's own loss)
    with the engine's divergence check on its first call, before the optimizer moves any
    parameter. It has no clean outputs, so the epoch row's ``train_acc`` is left out."""

    clean_outputs = None

    def __init__(self, closure: Callable[[], Tensor], check: DivergenceCheck) -> None:
        self._closure = closure
        self.check = check
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        result = self._closure(*args, **kwargs)
        self.calls += 1
        if self.calls == 1:
            self.check(float(result.detach().mean()))
        return result
