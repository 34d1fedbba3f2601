"""The eos tests run single-threaded: tiny models gain nothing from threads, and on a shared
2-core machine thread pools that spin while waiting made them many times slower."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


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
