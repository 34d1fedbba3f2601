"""Tiny models here: one intra-op thread is faster than two and fairer to a shared machine."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _tiny_models_one_thread(one_thread: None) -> None:
    """Every test here runs on one thread (the `one_thread` fixture of tests/conftest.py)."""
