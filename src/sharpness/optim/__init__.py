"""Optimizers: GD/SGD and the sharpness-aware family behind one interface.

::

    from sharpness.optim import build_optimizer, OPTIMIZERS, SigmaSchedule
    opt = build_optimizer("lesam", model, lr=0.05, momentum=0.9, weight_decay=1e-3,
                          total_steps=1000, sigma=0.35, rho_max=0.3)

    def closure():                      # same batch every call; backward inside
        loss = criterion(model(x), y)
        loss.backward()
        return loss

    loss = opt.step(closure)            # clean pass, perturb, perturbed pass, restore, base step
    opt.diagnostics                     # {'loss', 'grad_norm', 'radius', 'g_dot_eps', 'sigma', ...}

One module per optimizer (``sgd``, ``sam`` (l2), ``sam_linf``, ``asam``, ``esam``, ``fsam``,
``eigensam``, ``lesam``), each declared in ``optimizers.yaml`` (:class:`OptimizerSpec`); the
registry :data:`OPTIMIZERS` is built from those modules. :class:`BatchClosure` is a closure that also
supports ESAM's data selection and exact HVPs for Eigen-SAM.

The names below are loaded on first use (PEP 562): :mod:`sharpness.optim.spec` is read by the
cost planner and the figures' methods table, which must not pay torch's import (the largest
start-up cost of a job, ``benchmarks/measured/startup.md``) for it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module that defines it
_LAZY: dict[str, str] = {
    "SharpnessOptimizer": "base",
    "BatchClosure": "closures",
    "supports_selection": "closures",
    "EigenSAM": "eigensam",
    "ESAM": "esam",
    "FriendlySAM": "fsam",
    "LESAM": "lesam",
    "OPTIMIZERS": "registry",
    "build_optimizer": "registry",
    "ASAM": "asam",
    "SAM": "sam",
    "LinfSAM": "sam_linf",
    "GradientDescent": "sgd",
    "EpochSigmaSchedule": "schedules",
    "SigmaSchedule": "schedules",
    "HParam": "spec",
    "OptimizerSpec": "spec",
    "optimizer_spec": "spec",
    "optimizer_specs": "spec",
    "passes_per_step": "spec",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use (see the module doc)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'sharpness.optim' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sharpness.optim.{_LAZY[name]}"), name)
