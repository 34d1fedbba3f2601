"""The eos tests run single-threaded: tiny models gain nothing from threads, and on a shared
2-core machine thread pools that spin while waiting made them many times slower. A figure's
test draws from ``sweep_path``: one tiny setting swept once per session (``tiny_sweep``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharpness.eos.sweep import run_setting
from tests.eos.test_sweep import TINY


@pytest.fixture(autouse=True)
def _tiny_models_one_thread(one_thread: None) -> None:
    """Every test here runs on one thread (the `one_thread` fixture of tests/conftest.py)."""


@pytest.fixture(scope="session")
def tiny_sweep(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The tiny setting ``TINY`` swept once per session (flow and GD sweep, a few seconds):
    its summary, with ``out`` its folder. The tests only read it (figures go elsewhere)."""
    out = tmp_path_factory.mktemp("eos_tiny")
    result = run_setting(TINY, out, threads=1)
    result["out"] = out
    return result


@pytest.fixture
def sweep_path(tiny_sweep: dict) -> Path:
    """The ``sweep.json`` of the tiny setting ``TINY`` (flow and GD sweep), for figure tests."""
    return Path(tiny_sweep["out"]) / "sweep.json"
