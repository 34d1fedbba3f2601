"""Hessian-vector products of a model's loss, on one batch or summed over a data set.

The Hessian is never formed: ``H v`` is the gradient of ``<grad L, v>`` (double backward,
Pearlmutter's trick), which costs about two backward passes. :class:`HessianOperator` wraps
this as a symmetric linear operator over the flat vector of the model's trainable parameters,
counts how many products it has computed (the cost unit of every eigen-solver), and exports
itself as a ``scipy.sparse.linalg.LinearOperator`` for ``eigsh``.

Data is either one batch ``(inputs, targets)`` or any iterable of such batches (a
``DataLoader``, a list). ``criterion(outputs, targets)`` must return the *mean* loss over the
batch; over several batches the operator is the Hessian of the example-weighted mean loss,
``sum_b (n_b / N) H_b``, i.e. the Hessian of the loss on the whole data set.

The model's mode is an explicit, required argument (``mode="train"`` or ``"eval"``): it
changes the function (BatchNorm batch vs running statistics, dropout) and so the Hessian. In
train mode BatchNorm running statistics are frozen for the duration of each product.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from sharpness.curvature.modes import Mode, check_mode, model_mode

if TYPE_CHECKING:
    from scipy.sparse.linalg import LinearOperator

Criterion = Callable[[Tensor, Tensor], Tensor]
Batch = tuple[Tensor, Tensor]


def trainable_parameters(model: nn.Module) -> list[Tensor]:
    """The parameters the Hessian is taken over: those with ``requires_grad``."""
    return [p for p in model.parameters() if p.requires_grad]


def flatten(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate tensors into one flat vector (a copy)."""
    return torch.cat([t.reshape(-1) for t in tensors])


def unflatten(vector: Tensor, like: Sequence[Tensor]) -> list[Tensor]:
    """Split a flat vector into views shaped like ``like``."""
    out, offset = [], 0
    for t in like:
        n = t.numel()
        out.append(vector[offset : offset + n].view_as(t))
        offset += n
    if offset != vector.numel():
        raise ValueError(f"vector has {vector.numel()} entries, parameters have {offset}")
    return out


def hvp_from_loss(
    loss: Tensor, params: Sequence[Tensor]
) -> tuple[Tensor, Callable[[Tensor], Tensor]]:
    """Gradient of ``loss`` and a function ``v -> H v`` that reuses its graph.

    ``loss`` must have been computed with grad enabled from ``params``. The first
    differentiation keeps its graph (``create_graph=True``), so each later product is one
    extra backward pass. Parameters the loss does not depend on get zero rows.
    """
    grads = torch.autograd.grad(loss, params, create_graph=True, allow_unused=True)
    grads = tuple(
        torch.zeros_like(p) if g is None else g for g, p in zip(grads, params, strict=True)
    )
    flat_grad = flatten(grads)

    def product(vector: Tensor) -> Tensor:
        dot = torch.dot(flat_grad, vector.to(flat_grad))
        hv = torch.autograd.grad(dot, params, retain_graph=True, allow_unused=True)
        hv = [torch.zeros_like(p) if h is None else h for h, p in zip(hv, params, strict=True)]
        return flatten(hv).detach()

    return flat_grad.detach(), product


def _as_batches(data: Batch | Iterable[Batch]) -> tuple[bool, Batch | Iterable[Batch]]:
    """Tell a single ``(inputs, targets)`` pair apart from an iterable of batches."""
    if (
        isinstance(data, tuple | list)
        and len(data) == 2
        and all(isinstance(t, Tensor) for t in data)
    ):
        return True, (data[0], data[1])
    return False, data


class HessianOperator:
    """The loss Hessian of ``model`` on ``data`` as a symmetric linear operator.

    Parameters
    ----------
    model, criterion:
        ``criterion(model(inputs), targets)`` is the mean loss of a batch.
    data:
        one batch ``(inputs, targets)`` or an iterable of batches (e.g. a ``DataLoader``).
    mode:
        ``"train"`` or ``"eval"``; required, because it changes the Hessian.
    params:
        the parameters to differentiate with respect to (default: all trainable ones).
    device:
        where to move each batch (default: the device of the first parameter).

    On a single batch the graph of the gradient is built once and reused by every product,
    so a product costs one extra backward pass; over a data set each product re-runs the
    forward pass batch by batch (memory stays at one batch).
    """

    def __init__(
        self,
        model: nn.Module,
        criterion: Criterion,
        data: Batch | Iterable[Batch],
        *,
        mode: Mode,
        params: Sequence[Tensor] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        self.model = model
        self.criterion = criterion
        self.mode = check_mode(mode)
        self.params = list(params) if params is not None else trainable_parameters(model)
        if not self.params:
            raise ValueError("no trainable parameters to take the Hessian over")
        self.dim = sum(p.numel() for p in self.params)
        self.dtype = self.params[0].dtype
        self.device = torch.device(device) if device is not None else self.params[0].device
        self.single_batch, self.data = _as_batches(data)
        self.num_hvps = 0
        self._single: tuple[Tensor, float, Callable[[Tensor], Tensor]] | None = None

    # -- loss and gradient -------------------------------------------------------------
    def _batch_loss(self, batch: Any) -> tuple[Tensor, int]:
        inputs, targets = batch[0], batch[1]
        inputs = inputs.to(self.device)
        targets = targets.to(self.device)
        loss = self.criterion(self.model(inputs), targets)
        return loss, int(inputs.shape[0])

    def _iter_batches(self) -> Iterable[Any]:
        if self.single_batch:
            return [self.data]
        return self.data  # type: ignore[return-value]

    def _single_batch_product(self) -> tuple[Tensor, float, Callable[[Tensor], Tensor]]:
        if self._single is None:
            with model_mode(self.model, self.mode), torch.enable_grad():
                loss, _ = self._batch_loss(self.data)
                grad, product = hvp_from_loss(loss, self.params)
            self._single = (grad, float(loss.detach()), product)
        return self._single

    def loss_and_grad(self) -> tuple[float, Tensor]:
        """Mean loss and its flat gradient on the data (in the operator's mode)."""
        if self.single_batch:
            grad, loss, _ = self._single_batch_product()
            return loss, grad.clone()
        total_n, total_loss = 0, 0.0
        total_grad = torch.zeros(self.dim, dtype=self.dtype, device=self.device)
        with model_mode(self.model, self.mode), torch.enable_grad():
            for batch in self._iter_batches():
                loss, n = self._batch_loss(batch)
                grads = torch.autograd.grad(loss, self.params, allow_unused=True)
                grads = [
                    torch.zeros_like(p) if g is None else g
                    for g, p in zip(grads, self.params, strict=True)
                ]
                total_grad += n * flatten(grads)
                total_loss += n * float(loss.detach())
                total_n += n
        if total_n == 0:
            raise ValueError("the data iterable yielded no batches")
        return total_loss / total_n, total_grad / total_n

    # -- products ------------------------------------------------------------------
    def matvec(self, vector: Tensor) -> Tensor:
        """``H v`` for a flat vector ``v`` (any dtype/device; the result matches the params)."""
        vector = vector.to(device=self.device, dtype=self.dtype).reshape(-1)
        if vector.numel() != self.dim:
            raise ValueError(
                f"vector has {vector.numel()} entries, operator dimension is {self.dim}"
            )
        self.num_hvps += 1
        if self.single_batch:
            _, _, product = self._single_batch_product()
            return product(vector)
        total_n = 0
        result = torch.zeros(self.dim, dtype=self.dtype, device=self.device)
        with model_mode(self.model, self.mode), torch.enable_grad():
            for batch in self._iter_batches():
                loss, n = self._batch_loss(batch)
                _, product = hvp_from_loss(loss, self.params)
                result += n * product(vector)
                total_n += n
        if total_n == 0:
            raise ValueError("the data iterable yielded no batches")
        return result / total_n

    def __matmul__(self, vector: Tensor) -> Tensor:
        return self.matvec(vector)

    def as_linear_operator(self) -> LinearOperator:
        """A float64 ``scipy`` ``LinearOperator`` view (for ``eigsh``); products are counted."""
        # lazy: scipy; every training job imports this package (BatchNorm modes), few use
        # scipy's operators (about 0.15 CPU-s a process)
        from scipy.sparse.linalg import LinearOperator

        def _mv(x: np.ndarray) -> np.ndarray:
            v = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64).reshape(-1))
            return self.matvec(v).detach().cpu().to(torch.float64).numpy()

        return LinearOperator((self.dim, self.dim), matvec=_mv, rmatvec=_mv, dtype=np.float64)

    def release(self) -> None:
        """Drop the cached single-batch graph (frees memory; the next product rebuilds it)."""
        self._single = None
