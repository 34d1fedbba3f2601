"""Parameter norms the `eos` study tracks: l1, l2 and nuclear.

* ``l1`` and ``l2`` are taken over the flat vector of all trainable parameters;
* ``nuclear`` is the sum over weight matrices of their nuclear norms (sum of singular
  values, ``torch.linalg.matrix_norm(ord="nuc")``); a convolution kernel of shape
  ``(out, in, k, k)`` is read as the ``out x (in k k)`` matrix of its unfolded map, and
  vectors (biases, normalisation gains) are left out because a nuclear norm needs a matrix.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def _params(model: nn.Module) -> list[Tensor]:
    return [p.detach() for p in model.parameters() if p.requires_grad]


@torch.no_grad()
def l1_norm(model: nn.Module) -> float:
    """Sum of absolute values of all trainable parameters."""
    return float(sum(p.double().abs().sum() for p in _params(model)))


@torch.no_grad()
def l2_norm(model: nn.Module) -> float:
    """Euclidean norm of the flat trainable-parameter vector."""
    return float(torch.sqrt(sum(p.double().square().sum() for p in _params(model))))


@torch.no_grad()
def nuclear_norm(model: nn.Module) -> float:
    """Sum of the nuclear norms of every weight matrix (conv kernels unfolded)."""
    total = 0.0
    for p in _params(model):
        if p.ndim < 2:
            continue
        total += float(torch.linalg.matrix_norm(p.double().reshape(p.shape[0], -1), ord="nuc"))
    return total


def parameter_norms(model: nn.Module) -> dict[str, float]:
    """``{"l1": ..., "l2": ..., "nuclear": ...}`` of the model's trainable parameters."""
    return {"l1": l1_norm(model), "l2": l2_norm(model), "nuclear": nuclear_norm(model)}
