"""The learning-rate schedule of every training loop (warm-up, then cosine or constant)."""

from __future__ import annotations

import math
from typing import Any


def lr_at(cfg: dict[str, Any], step: int, total_steps: int) -> float:
    """Learning rate of step ``step`` (0-based): linear warm-up then cosine or constant.

    ``cosine_epoch`` is ``torch.optim.lr_scheduler.CosineAnnealingLR(T_max=epochs)`` stepped
    once per epoch, as the official loops of LE-SAM, ESAM, ASAM and Eigen-SAM do:
    ``lr * (1 + cos(pi * epoch / epochs)) / 2`` for every step of the epoch.
    """
    lr = cfg["lr"]
    warm = cfg["warmup_steps"]
    if warm and step < warm:
        return lr * (step + 1) / warm
    if cfg["lr_schedule"] == "cosine_epoch":
        epochs = cfg["epochs"]
        epoch = step // max(total_steps // epochs, 1)
        return lr * 0.5 * (1.0 + math.cos(math.pi * min(epoch, epochs) / epochs))
    if cfg["lr_schedule"] == "cosine":
        t = (step - warm) / max(total_steps - warm, 1)
        return lr * 0.5 * (1.0 + math.cos(math.pi * min(t, 1.0)))
    return lr

