"""Context managers that control a model's train/eval mode and its BatchNorm statistics.

Curvature quantities and the second pass of SAM-type optimizers evaluate the loss several
times on the same batch. Two things must not leak out of those evaluations:

* the module mode (``train``/``eval``) the caller had before, and
* BatchNorm running statistics: only the clean forward pass of a training step may update
  them, otherwise a SAM step would count the batch twice (once at the perturbed weights) and
  an HVP would shift the running averages every time it is called.

Both are handled here so that :mod:`sharpness.optim` and :mod:`sharpness.curvature` share one
implementation.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

Mode = Literal["train", "eval"]
MODES: tuple[str, ...] = ("train", "eval")


def check_mode(mode: str) -> Mode:
    """Return ``mode`` if it is ``"train"`` or ``"eval"``; raise ``ValueError`` otherwise."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
    return mode  # type: ignore[return-value]


@contextmanager
def frozen_bn_stats(model: nn.Module) -> Iterator[None]:
    """Forward passes inside this block do not touch BatchNorm running statistics.

    BatchNorm layers in training mode still normalize with the batch statistics (as in the
    clean pass), but neither ``running_mean``/``running_var`` nor ``num_batches_tracked``
    change. This is done by switching ``track_running_stats`` off, which makes PyTorch pass no
    running buffers to the kernel; it is exact (unlike the ``momentum = 0`` trick, which still
    increments ``num_batches_tracked``). Layers in eval mode are left alone: they read the
    running statistics and never update them.
    """
    switched: list[_BatchNorm] = []
    for module in model.modules():
        if isinstance(module, _BatchNorm) and module.training and module.track_running_stats:
            module.track_running_stats = False
            switched.append(module)
    try:
        yield
    finally:
        for module in switched:
            module.track_running_stats = True


@contextmanager
def model_mode(model: nn.Module, mode: Mode, *, freeze_bn: bool = True) -> Iterator[None]:
    """Put ``model`` in ``mode`` for the block and restore every module's own flag afterwards.

    In ``"train"`` mode the BatchNorm running statistics are frozen (``freeze_bn=True``) so
    that repeated loss evaluations (HVPs, Lanczos, Hutchinson) leave the model unchanged.
    """
    check_mode(mode)
    previous = {module: module.training for module in model.modules()}
    model.train(mode == "train")
    try:
        if mode == "train" and freeze_bn:
            with frozen_bn_stats(model):
                yield
        else:
            yield
    finally:
        for module, flag in previous.items():
            module.training = flag
