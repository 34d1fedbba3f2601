"""The loss budget schedules of LE-SAM (paper 002, "Fix the Loss, Not the Radius").

:class:`EpochSigmaSchedule` is the official one (per epoch); :class:`SigmaSchedule` below is
our per-step variant with fractions of training, kept for full-batch runs.

``sigma_t`` rises linearly over the first ``warmup_frac`` of training, stays at ``sigma``, and
is cosine-annealed to exactly 0 over the last ``anneal_frac`` of training (the paper anneals
the budget so that training ends with plain descent steps). The fractions are ours: the
summary names the three phases but not their lengths.

The schedule is a small stateful object (its own step counter) with ``state_dict`` /
``load_state_dict``, so a resumed run continues the same curve.
"""

from __future__ import annotations

import math
from typing import Any


class SigmaSchedule:
    """Piecewise schedule of the LE-SAM loss budget over ``total_steps`` optimizer steps.

    With ``W = round(warmup_frac * T)`` and ``A = round(anneal_frac * T)``:

    * ``t < W``: ``sigma * (t + 1) / W`` (the first step already has a non-zero budget),
    * ``W <= t < T - A``: ``sigma``,
    * ``T - A <= t < T``: ``sigma * (1 + cos(pi * (t - (T - A) + 1) / A)) / 2``, which is 0 at
      the last step ``t = T - 1``,
    * ``t >= T``: 0.
    """

    def __init__(
        self,
        sigma: float,
        total_steps: int,
        warmup_frac: float = 0.1,
        anneal_frac: float = 0.2,
    ) -> None:
        if sigma < 0:
            raise ValueError(f"sigma must be non-negative, got {sigma}")
        if total_steps < 1:
            raise ValueError(f"total_steps must be at least 1, got {total_steps}")
        if not (0 <= warmup_frac <= 1 and 0 <= anneal_frac <= 1 and warmup_frac + anneal_frac <= 1):
            raise ValueError(
                "warmup_frac and anneal_frac must lie in [0, 1] and sum to at most 1, "
                f"got {warmup_frac} and {anneal_frac}"
            )
        self.sigma = float(sigma)
        self.total_steps = int(total_steps)
        self.warmup_steps = round(warmup_frac * total_steps)
        self.anneal_steps = round(anneal_frac * total_steps)
        self.last_step = 0

    def value(self, t: int) -> float:
        """``sigma_t`` at step ``t`` (pure; does not move the counter)."""
        total, warm, anneal = self.total_steps, self.warmup_steps, self.anneal_steps
        if t < 0:
            raise ValueError(f"step must be non-negative, got {t}")
        if t >= total:
            return 0.0
        if t < warm:
            return self.sigma * (t + 1) / warm
        start = total - anneal
        if t >= start:
            progress = (t - start + 1) / anneal
            return self.sigma * 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.sigma

    def current(self) -> float:
        """``sigma_t`` at the current step."""
        return self.value(self.last_step)

    def step(self) -> None:
        """Advance to the next step."""
        self.last_step += 1

    def state_dict(self) -> dict[str, Any]:
        return {"last_step": self.last_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.last_step = int(state["last_step"])


class EpochSigmaSchedule:
    """LE-SAM's official per-epoch budget (smithgun2005/LE-SAM-ICML2026 ``lesam.py``,
    ``schedule_lesam_sigma``), a pure function of the epoch.

    * warm-up (``warmup_epochs > 0`` and ``epoch < warmup_epochs``): linear from
      ``warmup_start`` at epoch 0 to ``sigma`` at epoch ``warmup_epochs - 1``;
    * then ``sigma`` until ``max(decay_start, warmup_epochs)``;
    * then ``decay`` (``cosine``, ``linear`` or ``none``) from ``sigma`` to ``sigma_min`` at the
      last epoch ``total_epochs - 1``: with ``t = (epoch - start) / (total_epochs - start - 1)``,
      cosine gives ``sigma_min + (sigma - sigma_min)(1 + cos(pi t)) / 2``; a decay stage of at
      most one epoch is ``sigma_min``.

    Official defaults: warm-up 10 epochs from 0, cosine decay from epoch 160 to 0.
    """

    def __init__(self, sigma: float, total_epochs: int, *, warmup_epochs: int = 10,
                 warmup_start: float = 0.0, decay: str = "cosine", decay_start: int = 160,
                 sigma_min: float = 0.0) -> None:
        if sigma < 0:
            raise ValueError(f"sigma must be non-negative, got {sigma}")
        if total_epochs < 1:
            raise ValueError(f"total_epochs must be at least 1, got {total_epochs}")
        if decay not in ("cosine", "linear", "none"):
            raise ValueError(f"decay must be 'cosine', 'linear' or 'none', got {decay!r}")
        self.sigma = float(sigma)
        self.total_epochs = int(total_epochs)
        self.warmup_epochs = max(0, int(warmup_epochs))
        self.warmup_start = float(warmup_start)
        self.decay = decay
        self.decay_start = int(decay_start)
        self.sigma_min = float(sigma_min)

    def value(self, epoch: int) -> float:
        """``sigma`` of epoch ``epoch`` (0-based)."""
        if epoch < 0:
            raise ValueError(f"epoch must be non-negative, got {epoch}")
        sigma, lo_w = self.sigma, self.warmup_start
        warm = self.warmup_epochs
        if warm > 0 and epoch < warm:
            t = 1.0 if warm == 1 else min(1.0, epoch / (warm - 1))
            value = lo_w + (sigma - lo_w) * t
            return max(min(lo_w, sigma), min(max(lo_w, sigma), value))
        if self.decay == "none":
            return sigma
        start = max(self.decay_start, warm)
        if epoch < start:
            return sigma
        length = self.total_epochs - start
        if length <= 1:
            return self.sigma_min
        t = min(1.0, (epoch - start) / max(1, length - 1))
        if self.decay == "linear":
            value = sigma + (self.sigma_min - sigma) * t
        else:
            value = self.sigma_min + 0.5 * (sigma - self.sigma_min) * (1.0 + math.cos(math.pi * t))
        return max(min(sigma, self.sigma_min), min(max(sigma, self.sigma_min), value))
