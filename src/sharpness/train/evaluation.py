"""Evaluation of a model on a data set (mean loss, accuracy) and row helpers."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from sharpness.train.losses import Criterion

EVAL_CHUNK = 1000


@torch.no_grad()
def evaluate(model: nn.Module, x: Tensor, y: Tensor, loss_fn: Criterion,
             autocast: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
             chunk: int = EVAL_CHUNK, workers: int = 0) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` (eval mode) on ``(x, y)``, in chunks (streamed
    through a DataLoader with ``workers`` when ``x`` is an image folder)."""
    was_training = model.training
    model.eval()
    total, correct = 0.0, 0
    dev = next(model.parameters()).device
    if hasattr(x, "loader"):  # an image folder (sharpness.data.folders): DataLoader workers
        chunks = iter(x.loader(y, chunk, workers=workers, pin_memory=dev.type == "cuda"))
    else:
        chunks = ((x[s:s + chunk], y[s:s + chunk]) for s in range(0, len(x), chunk))
    for xc, yc in chunks:
        xx = xc.to(dev, non_blocking=True)  # a no-op for device data
        with autocast():
            out = model(xx)
        yy = yc.to(dev, non_blocking=True)
        total += float(loss_fn(out, yy).double().sum())
        correct += int((out.argmax(1) == yy).sum())
    model.train(was_training)
    n = max(len(x), 1)
    return total / n, correct / n


def param_norm(model: nn.Module) -> float:
    """l2 norm of all trainable parameters."""
    with torch.no_grad():
        return float(torch.sqrt(sum(p.detach().double().square().sum()
                                    for p in model.parameters() if p.requires_grad)))


def finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None

