"""A metrics hook that makes a tiny run slow enough to be killed mid-way (loaded by
``metrics_fn`` in a ``sharpness train`` subprocess of ``test_run_states.py``).

It sleeps ``SHARPNESS_TEST_ROW_SLEEP`` seconds (default 0) on every logged row and adds no
numbers, so a slowed run and a plain one have the same config, cache key and metrics.
"""

from __future__ import annotations

import os
import time

from torch import nn


def slow_rows(model: nn.Module) -> dict[str, float]:
    """Sleep the environment's ``SHARPNESS_TEST_ROW_SLEEP`` seconds; no numbers."""
    del model
    time.sleep(float(os.environ.get("SHARPNESS_TEST_ROW_SLEEP", "0")))
    return {}
