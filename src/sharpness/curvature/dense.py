"""Dense Hessian of a small model's loss: the test oracle for HVPs, Lanczos and Hutchinson.

Built with ``torch.autograd.functional.hessian`` over the flat parameter vector through
``torch.func.functional_call``: one full gradient row per parameter, independent of the
operator code in :mod:`sharpness.curvature.hvp`. The memory is ``dim^2`` numbers, so this is
for models with at most a few thousand parameters.

Why not ``torch.func.hessian``: under ``vmap`` (which it uses), BatchNorm in training mode
gives a wrong, not even symmetric Hessian in torch 2.14 (checked against central finite
differences of the gradient); the row-by-row autograd version agrees with finite differences
to 1e-8. ``tests/curvature`` keeps a finite-difference check of this oracle.
"""

from __future__ import annotations

from torch import Tensor, nn
from torch.autograd.functional import hessian
from torch.func import functional_call

from sharpness.curvature.hvp import Criterion, flatten, unflatten
from sharpness.curvature.modes import Mode, model_mode


def dense_hessian(
    model: nn.Module,
    criterion: Criterion,
    inputs: Tensor,
    targets: Tensor,
    *,
    mode: Mode,
    max_dim: int = 20_000,
) -> Tensor:
    """The ``dim x dim`` Hessian of ``criterion(model(inputs), targets)`` w.r.t. trainable params.

    Parameter order matches :class:`sharpness.curvature.hvp.HessianOperator` (the order of
    ``model.parameters()`` restricted to those requiring grad).
    """
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    names = [name for name, _ in named]
    params = [p.detach() for _, p in named]
    dim = sum(p.numel() for p in params)
    if dim > max_dim:
        raise ValueError(f"model has {dim} parameters; a dense Hessian is limited to {max_dim}")
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    frozen = {name: p.detach() for name, p in model.named_parameters() if not p.requires_grad}

    def loss_of(flat: Tensor) -> Tensor:
        tensors = dict(zip(names, unflatten(flat, params), strict=True))
        outputs = functional_call(model, {**frozen, **buffers, **tensors}, (inputs,))
        return criterion(outputs, targets)

    with model_mode(model, mode):
        return hessian(loss_of, flatten(params)).detach()
