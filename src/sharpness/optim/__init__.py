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

Names in :data:`OPTIMIZERS`: ``sgd``, ``sam`` (l2), ``sam_linf``, ``asam``, ``esam``, ``fsam``,
``eigensam``, ``lesam``. :class:`BatchClosure` is a closure that also supports ESAM's data
selection and exact HVPs for Eigen-SAM.
"""

from sharpness.optim.base import SharpnessOptimizer
from sharpness.optim.closures import BatchClosure, supports_selection
from sharpness.optim.eigensam import EigenSAM
from sharpness.optim.esam import ESAM
from sharpness.optim.fsam import FriendlySAM
from sharpness.optim.lesam import LESAM
from sharpness.optim.registry import OPTIMIZERS, build_optimizer
from sharpness.optim.sam import ASAM, SAM, GradientDescent, LinfSAM
from sharpness.optim.schedules import EpochSigmaSchedule, SigmaSchedule

__all__ = [
    "ASAM",
    "ESAM",
    "LESAM",
    "OPTIMIZERS",
    "SAM",
    "BatchClosure",
    "EigenSAM",
    "EpochSigmaSchedule",
    "FriendlySAM",
    "GradientDescent",
    "LinfSAM",
    "SharpnessOptimizer",
    "SigmaSchedule",
    "build_optimizer",
    "supports_selection",
]
