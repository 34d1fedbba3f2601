"""What a caller can plug into the engine's loops (:mod:`sharpness.train.loop`).

None of the hooks is saved in checkpoints: their numbers go into the run's metrics rows, which
the checkpoint counts, so a resumed run cuts them back and rewrites them exactly. The modules
that define the hooks are part of the run's cache key (their code), and so are
:attr:`TrainHooks.settings` (what the hooks measure with, e.g. a probe's interval).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from torch import Tensor, nn

from sharpness.train.data_prep import PreparedData
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


class BatchSource(Protocol):
    """A custom source of mini-batches (:attr:`TrainHooks.batches`).

    ``epoch()`` yields ``(inputs, labels)`` for each step of one epoch, in order; ``inputs``
    may be anything the custom closure understands, ``labels`` are the batch's integer
    labels (their length is the batch size). Its random draws must come from the run's
    generator ``run.gen`` (checkpointed by the engine) or from state it returns in
    ``state_dict()`` (a dict of tensors / plain values, restored by ``load_state_dict``)."""

    kind: str

    def epoch(self) -> Iterator[tuple[Any, Tensor]]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass
class TrainHooks:
    """Optional callables the engine calls. A checkpoint holds the state of a ``sharpness``
    hook that has ``state_dict``/``load_state_dict`` (a Lanczos warm start); of the others,
    nothing.

    Measurements: ``sharpness`` every ``sharpness_every`` epochs/steps on the (un-augmented)
    train set; ``metrics`` on every logged row; ``on_step_end`` after every step (tests raise
    from it to simulate a kill); ``probe`` around every mini-batch step (:class:`StepProbe`).

    A training method other than plain supervised mini-batches (e.g. GLMC,
    :mod:`sharpness.lesam.glmc`) replaces pieces of the mini-batch loop and keeps the rest
    (schedule, divergence, checkpoint/resume, rows, progress, final files, provenance):
    ``data(cfg, data) -> data`` reshapes the prepared data (a long-tailed subset);
    ``wrap_net(net, num_classes) -> net`` wraps the bare network before the input
    normalisation; ``batches(run) -> BatchSource`` replaces the batch source;
    ``closure(run, inputs, labels) -> closure`` replaces the loss closure (a plain
    ``closure() -> loss`` that runs its backward pass; the engine adds the divergence check);
    ``on_epoch_end(run, row)`` adds to each epoch row; ``on_finish(run, final)`` adds to
    ``final.json``. ``settings``: what the hooks depend on beyond their code, part of the
    cache key and the provenance.
    """

    sharpness: SharpnessHook | None = None
    metrics: MetricsHook | None = None
    on_step_end: Callable[[StepInfo], None] | None = None
    probe: StepProbe | None = None
    data: Callable[[dict[str, Any], PreparedData], PreparedData] | None = None
    wrap_net: Callable[[nn.Module, int], nn.Module] | None = None
    batches: Callable[[Any], BatchSource] | None = None
    closure: Callable[[Any, Any, Tensor], Callable[[], Tensor]] | None = None
    on_epoch_end: Callable[[Any, dict[str, Any]], None] | None = None
    on_finish: Callable[[Any, dict[str, Any]], None] | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def callables(self) -> tuple[Any, ...]:
        """Every hook that is set (their modules are part of the cache key)."""
        return tuple(h for h in (self.sharpness, self.metrics, self.on_step_end, self.probe,
                                 self.data, self.wrap_net, self.batches, self.closure,
                                 self.on_epoch_end, self.on_finish) if h is not None)
