"""A metrics hook for the DDP kill-and-resume test (loaded by ``metrics_fn`` in a subprocess).

With ``SHARPNESS_TEST_KILL_AT_ROW=k`` in the environment, rank 0 kills itself (SIGKILL, no
clean-up: a node failure) when the engine asks for the numbers of its k-th logged row, i.e.
before that row and its epoch's checkpoint are written. Without the variable it adds nothing,
so the killed run and the reference run have the same config.
"""

from __future__ import annotations

import os
import signal

from torch import nn

_calls = 0


def kill_rank0_at_row(model: nn.Module) -> dict[str, float]:
    """Count logged rows; SIGKILL rank 0 at the row the environment names."""
    del model
    global _calls
    _calls += 1
    at = os.environ.get("SHARPNESS_TEST_KILL_AT_ROW")
    if at and int(at) == _calls and os.environ.get("RANK") == "0":
        os.kill(os.getpid(), signal.SIGKILL)
    return {}
