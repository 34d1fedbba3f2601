"""Run status, shared by every training loop (the engine, GLMC, the signal probe).

A run ends ``ok``, ``diverged`` (its loss turned NaN/inf or passed ``diverge_loss``; recorded
with the step and the loss, not raised) or ``failed`` (an exception: recorded with the error by
:class:`sharpness.provenance.RunRecord`, and the job fails). One implementation, so a GLMC or
signal run that blows up is reported exactly as an engine run is.
"""

from __future__ import annotations

import math
from typing import Any

from sharpness.provenance import RunRecord


def is_diverged(loss: float, diverge_loss: float | None) -> bool:
    """Whether a loss counts as divergence: NaN/inf, or above ``diverge_loss`` when set."""
    return not math.isfinite(loss) or (diverge_loss is not None and loss > diverge_loss)


def diverged_fields(step: int, loss: float) -> dict[str, Any]:
    """The ``final.json`` fields of a diverged run (a non-finite loss as its string)."""
    return {"status": "diverged", "reason": "diverged", "diverged_step": step,
            "diverged_loss": loss if math.isfinite(loss) else str(loss)}


def record_final(record: RunRecord, final: dict[str, Any]) -> None:
    """Put a run's final status on its provenance record."""
    if final["status"] == "diverged":
        record.set_status("diverged", diverged_step=final["diverged_step"])
    else:
        record.set_status("ok", reason=final.get("reason"))
