"""Build any optimizer of the project by name: the one entry point training code uses."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from sharpness.optim import eager
from sharpness.optim.base import SharpnessOptimizer
from sharpness.optim.spec import optimizer_specs


def discover() -> dict[str, type[SharpnessOptimizer]]:
    """Every optimizer class of the package by name: for each entry of ``optimizers.yaml``, the
    class of module ``sharpness.optim.<name>`` declared with ``optimizer="<name>"``, so that a
    new optimizer is its entry and its module and nothing here."""
    found: dict[str, type[SharpnessOptimizer]] = {}
    for name in optimizer_specs():
        module = importlib.import_module(f"sharpness.optim.{name}")
        classes = [c for c in vars(module).values() if isinstance(c, type)
                   and issubclass(c, SharpnessOptimizer)
                   and getattr(c.__dict__.get("spec"), "name", None) == name]
        if len(classes) != 1:
            raise TypeError(f"sharpness.optim.{name}: optimizers.yaml declares {name!r}, so the "
                            f"module defines exactly one SharpnessOptimizer subclass with "
                            f"optimizer={name!r}; found {len(classes)}")
        found[name] = classes[0]
    return found


OPTIMIZERS: dict[str, type[SharpnessOptimizer]] = discover()


def build_optimizer(
    name: str,
    model: nn.Module,
    lr: float = 0.1,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    nesterov: bool = False,
    total_steps: int = 1000,
    *,
    steps_per_epoch: int | None = None,
    seed: int = 0,
    base_optimizer: torch.optim.Optimizer | None = None,
    resolved: Mapping[str, Any] | None = None,
    **hparams: Any,
) -> SharpnessOptimizer:
    """The optimizer ``name`` (a key of :data:`OPTIMIZERS`) over ``model``'s trainable params.

    The base optimizer is ``torch.optim.SGD(lr, momentum, weight_decay, nesterov)`` unless one
    is given (then ``lr``/``momentum``/``weight_decay``/``nesterov`` are ignored); built as
    :class:`sharpness.optim.eager.SGD`, the same arithmetic without importing ``torch._dynamo``
    on the first step. Weight decay lives in the base optimizer, so it is applied once per step
    at ``theta`` and never enters the perturbation. ``hparams`` are the optimizer's own
    (``rho``, ``sigma``, ...), resolved by its spec; an unknown one raises ``ValueError``
    naming it. ``resolved`` instead: hyper-parameters resolved already (a validated run
    config's ``opt_hparams``), taken as they are. ``total_steps``
    drives LE-SAM's sigma schedule in ``fractions`` mode; ``steps_per_epoch`` its official
    per-epoch schedule and Eigen-SAM's in-epoch refresh (None: one step counts as one epoch).
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    if base_optimizer is None:
        params = [p for p in model.parameters() if p.requires_grad]
        base_optimizer = eager.SGD(
            params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov
        )
    return OPTIMIZERS[name](model, base_optimizer, seed=seed, total_steps=total_steps,
                            steps_per_epoch=steps_per_epoch, resolved=resolved, **hparams)
