"""What a caller can plug into the engine's loops (:mod:`sharpness.train.loop`).

None of the hooks is saved in checkpoints: their numbers go into the run's metrics rows, which
the checkpoint counts, so a resumed run cuts them back and rewrites them exactly. The modules
that define the hooks are part of the run's cache key (their code), and so are
:attr:`TrainHooks.settings` (what the hooks measure with, e.g. a probe's interval).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from torch import Tensor, nn

from sharpness.train.losses import Criterion

#: ``hook(model, criterion, x_train, y_train) -> float | dict``: e.g. a Lanczos top eigenvalue
SharpnessHook = Callable[[nn.Module, Criterion, Tensor, Tensor], "float | dict[str, float]"]
#: ``hook(model) -> dict``: extra numbers for each logged row (e.g. parameter norms)
MetricsHook = Callable[[nn.Module], dict[str, float]]


@dataclass
class StepInfo:
    """What ``on_step_end`` hooks see after each optimizer step."""

    step: int  # steps completed so far
    epoch: int  # current epoch (0-based; 0 in full-batch mode)
    loss: float  # clean loss of the step
    diagnostics: dict[str, float]


@dataclass
class BatchStep:
    """One mini-batch step as a probe sees it (``step`` counts the steps done before it)."""

    step: int
    epoch: int
    total_steps: int
    lr: float
    x: Tensor
    y: Tensor
    model: nn.Module  # the bare model (not a DDP wrapper)
    optimizer: Any  # a sharpness.optim optimizer: ``diagnostics``, ``perturbation_vector()``
    loss_fn: Criterion  # per-example loss


class StepProbe(Protocol):
    """A measurement around a mini-batch step.

    ``before(step)`` runs before the optimizer step and returns what ``after`` needs (e.g. a
    copy of the model at ``theta_t``), or ``None`` to skip this step; ``after(step, state)``
    runs after a completed step and returns a row for ``metrics.jsonl`` (written with
    ``kind = "probe"``) or ``None``. Neither may draw from the run's random generators.
    """

    def before(self, step: BatchStep) -> Any: ...

    def after(self, step: BatchStep, state: Any) -> dict[str, Any] | None: ...


@dataclass
class TrainHooks:
    """Optional callables the engine calls; none of them is saved in checkpoints.

    ``sharpness`` every ``sharpness_every`` epochs/steps on the (un-augmented) train set;
    ``metrics`` on every logged row; ``on_step_end`` after every step (tests raise from it to
    simulate a kill); ``probe`` around every mini-batch step (:class:`StepProbe`);
    ``settings``: what the hooks depend on beyond their code, part of the cache key.
    """

    sharpness: SharpnessHook | None = None
    metrics: MetricsHook | None = None
    on_step_end: Callable[[StepInfo], None] | None = None
    probe: StepProbe | None = None
    settings: dict[str, Any] = field(default_factory=dict)
