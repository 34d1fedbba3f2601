"""A training run killed at a chosen step, for the resume and damage tests: the hook raises
:class:`Killed` at the end of that optimizer step, as a SIGKILL would stop it there."""

from __future__ import annotations

from sharpness.train import TrainHooks


class Killed(RuntimeError):
    """The simulated kill (never raised by the code under test)."""


def kill_at(step: int) -> TrainHooks:
    """Hooks that stop a run with :class:`Killed` when optimizer step ``step`` ends."""

    def hook(info: object) -> None:
        if getattr(info, "step", None) == step:
            raise Killed(f"simulated kill at step {step}")

    return TrainHooks(on_step_end=hook)
