"""Run status, shared by every training loop (the engine, GLMC, the signal probe, the eos and
bridge sweeps).

A run ends ``ok``, ``diverged`` (recorded with the step, the loss and the reason, not raised)
or ``failed`` (an exception: recorded with the error by :class:`sharpness.runs.run_record.RunRecord`,
and the job fails); Ctrl-C or SIGTERM leave ``interrupted``. What counts as divergence is the
one rule of :mod:`sharpness.runs.state` (:func:`~sharpness.runs.state.divergence` on every step's
clean loss, :func:`~sharpness.runs.state.end_divergence` on the final train loss), so a GLMC or
signal run that blows up is reported exactly as an engine run is.
"""

from __future__ import annotations

import math
from typing import Any

from sharpness.runs.run_record import RunRecord
from sharpness.runs.state import end_divergence


def diverged_fields(step: int, loss: float, why: str) -> dict[str, Any]:
    """The ``final.json`` fields of a diverged run (a non-finite loss as its string); ``why``
    is the rule's reason (``non_finite``, ``blow_up``, ``above_limit``, ``above_chance_loss``,
    ``above_initial_loss``)."""
    return {"status": "diverged", "reason": "diverged", "diverged_step": step,
            "diverged_loss": loss if math.isfinite(loss) else str(loss), "diverged_why": why}


#: the fewest steps after which the end-of-run rule is applied
END_MIN_STEPS = 10


def final_check(stop: dict[str, Any], step: int, train_loss: float, initial_loss: float | None,
                *, loss_kind: str, num_classes: int) -> dict[str, Any]:
    """``stop`` unchanged, or :func:`diverged_fields` when a run that ended ``ok`` has a final
    train loss that :func:`sharpness.runs.state.end_divergence` calls a blow-up (cross-entropy:
    above ``ln C`` and above the initial loss; any other loss: above the initial loss).

    Runs shorter than :data:`END_MIN_STEPS` are left as they are: their final loss (an eval
    pass over the whole training set, BatchNorm on running statistics that have barely moved)
    and their first batch's loss differ by sampling alone (a 3-step run on 12 noise images went
    1.6 -> 2.7 without any blow-up); a real blow-up that early trips the per-step rule."""
    if stop["status"] != "ok" or step < END_MIN_STEPS:
        return stop
    why = end_divergence(train_loss, initial_loss,
                         classifier_classes=num_classes if loss_kind == "ce" else None)
    return stop if why is None else diverged_fields(step, train_loss, why)


def record_final(record: RunRecord, final: dict[str, Any]) -> None:
    """Put a run's final status on its provenance record."""
    if final["status"] == "diverged":
        record.set_status("diverged", diverged_step=final["diverged_step"],
                          diverged_why=final.get("diverged_why"))
    else:
        record.set_status("ok", reason=final.get("reason"))
