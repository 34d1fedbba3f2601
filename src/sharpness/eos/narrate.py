"""What the eos jobs say in their logs, in words: the gradient flow's progress (flow time,
loss, sharpness, cost) and how each GD run of a sweep ended. The workflow sends a job's stderr
to its log, so ``tail -f logs/eos/setting_<name>.log`` follows a sweep (:mod:`sharpness.runs.progress`)."""

from __future__ import annotations

import math
import time
from typing import Any

from sharpness.runs.progress import every_s, say
from sharpness.runs.state import progressed

#: the divergence rule's reasons (sharpness.runs.state), in words
WHY = {"non_finite": "its loss became NaN/inf",
       "blow_up": "its loss blew up (above diverge_factor x its initial loss)",
       "above_limit": "its loss passed diverge_loss",
       "above_chance_loss": "it ended above its initial loss and the uniform guess's",
       "above_initial_loss": "it ended above its initial loss"}


def flow_reporter(label: str) -> Any:
    """``on_record`` for :func:`sharpness.eos.flow.gradient_flow`: a log line at most every few seconds
    (:func:`sharpness.runs.progress.every_s`) with the flow time, loss, sharpness and cost."""
    last = [-math.inf]

    def report(rec: dict[str, float]) -> None:
        progressed()  # every flow point is progress of the run (its heartbeat)
        now = time.monotonic()
        if now - last[0] < every_s():
            return
        last[0] = now
        say(f"{label}: gradient flow at t = {rec['t']:.4g}: loss {rec['loss']:.4g}, "
            f"sharpness {rec['sharpness']:.4g}, {int(rec['nfev'])} gradients, "
            f"{int(rec['jvps'])} + {int(rec['hvps'])} Hessian-vector products")
    return report


def run_outcome(row: dict[str, Any]) -> str:
    """One sweep row in words, for the log: how the run ended and its final numbers."""
    if row["status"] == "diverged":
        text = (f"diverged at step {row['diverged_step']}: "
                f"{WHY.get(row.get('diverged_why') or '', 'diverged')}")
    elif row["converged"]:
        text = f"reached the loss goal in {row['steps']} steps"
    else:
        text = f"stopped at {row['reason']} after {row['steps']} steps"
    numbers = [f"train loss {row['train_loss']:.4g}" if row["train_loss"] is not None else "",
               f"sharpness {row['sharpness']:.4g}" if "sharpness" in row else "",
               f"eta*S/2 {row['eta_s_over_2']:.3g}" if "eta_s_over_2" in row else ""]
    return text + "".join(f", {n}" for n in numbers if n)
