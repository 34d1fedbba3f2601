"""Shared fixtures: the repository root and the Python environment the suite runs in."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

os.environ.setdefault("OMP_NUM_THREADS", "2")


def pytest_configure(config: pytest.Config) -> None:
    """Records are signed (sharpness.runs.signing): the suite, and every process it starts,
    signs with a key made for this session in a temporary folder, never the developer's
    ``~/.config/sharpness/signing_key``; no key file of the developer is trusted either."""
    import tempfile

    keys = Path(tempfile.mkdtemp(prefix="sharpness-test-keys-"))
    os.environ["SHARPNESS_SIGNING_KEY"] = str(keys / "signing_key")
    os.environ["SHARPNESS_TRUSTED_DIR"] = str(keys / "trusted")  # none: never the developer's
    os.environ.pop("SHARPNESS_TRUSTED_KEYS", None)


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    """The folder holding `snakemake` and `sharpness` for this interpreter."""
    return BIN


@pytest.fixture(scope="session")
def imports_torch() -> Callable[[str], bool]:
    """``imports_torch(code)``: run ``code`` in a fresh interpreter and say whether it
    imported torch (a figure job should not: about 1.6 s of start-up each)."""
    import subprocess

    def run(code: str) -> bool:
        probe = code + "\nimport sys\nprint('torch' in sys.modules)\n"
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()
        return out[-1] == "True"

    return run


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests with a reason when CUDA is absent."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none is present on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
