"""The eos tests run single-threaded: tiny models gain nothing from threads, and on a shared
2-core machine thread pools that spin while waiting made them many times slower. A figure's
test draws from ``sweep_path``: one tiny setting swept once per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from sharpness.eos.sweep import run_setting
from tests.eos.test_sweep import TINY


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        yield
    else:
        with threadpool_limits(limits=1):
            yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def sweep_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``sweep.json`` of the tiny setting ``TINY`` (flow and GD sweep), for figure tests."""
    out = tmp_path_factory.mktemp("eos_fig")
    run_setting(TINY, out, threads=1)
    return out / "sweep.json"
