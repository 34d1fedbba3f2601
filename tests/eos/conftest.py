"""The eos tests run single-threaded: tiny models gain nothing from threads, and on a shared
2-core machine thread pools that spin while waiting made them many times slower. A figure's
test draws from ``sweep_path``: one tiny setting swept once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharpness.eos.sweep import run_setting
from tests.eos.test_sweep import TINY


@pytest.fixture(autouse=True)
def _tiny_models_one_thread(one_thread: None) -> None:
    """Every test here runs on one thread (the `one_thread` fixture of tests/conftest.py)."""


@pytest.fixture(scope="module")
def sweep_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``sweep.json`` of the tiny setting ``TINY`` (flow and GD sweep), for figure tests."""
    out = tmp_path_factory.mktemp("eos_fig")
    run_setting(TINY, out, threads=1)
    return out / "sweep.json"
