"""The two terms of the second-order expansion of a perturbed loss.

``L(theta + eps) ~= L(theta) + <g, eps> + 0.5 * eps^T H eps``. SAM's training signal is
dominated by the first-order term ``<g, eps> = rho * ||g||``; LE-SAM fixes it to ``sigma_t`` so
that only the curvature term varies (paper 002, the ``fig_signal`` item). These helpers
compute both terms for a perturbation given as a flat vector or a list of per-parameter
tensors (as :class:`sharpness.optim` stores it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from sharpness.curvature.hvp import HessianOperator, flatten


def _as_flat(vector: Tensor | Sequence[Tensor]) -> Tensor:
    return vector.reshape(-1) if isinstance(vector, Tensor) else flatten(list(vector))


def first_order_term(grad: Tensor | Sequence[Tensor], eps: Tensor | Sequence[Tensor]) -> float:
    """``<g, eps>``: the loss rise predicted by the gradient alone."""
    g, e = _as_flat(grad), _as_flat(eps)
    return float(torch.dot(g, e.to(g)))


def curvature_term(
    hessian: HessianOperator | Callable[[Tensor], Tensor] | Tensor,
    eps: Tensor | Sequence[Tensor],
) -> float:
    """``0.5 * eps^T H eps``; ``hessian`` is an operator, a ``v -> H v`` function or a matrix."""
    e = _as_flat(eps)
    if isinstance(hessian, Tensor):
        hv = hessian.to(e) @ e
    elif isinstance(hessian, HessianOperator):
        hv = hessian.matvec(e)
    else:
        hv = hessian(e)
    return 0.5 * float(torch.dot(e.to(hv), hv))
