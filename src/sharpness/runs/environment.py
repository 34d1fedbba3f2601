"""Where and with what a result was computed: the checkout's commit and dirtiness, the
versions of the packages that decide the numbers, the device, and the time.

Every provenance record (:mod:`sharpness.runs.provenance`) and the claims registration carry
these facts; they are kept apart from the records themselves because they describe the
process, not a run.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

#: git options that keep any program a repository configures (fsmonitor, hooks) from starting
SAFE_GIT_OPTIONS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
TRACKED_PACKAGES = ("sharpness", "torch", "torchvision", "numpy", "scipy", "matplotlib",
                    "seaborn", "snakemake", "grad-cam")


def now_iso() -> str:
    """Current UTC time as an ISO-8601 string."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@functools.lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """Git commit and dirtiness of the checkout the package runs from (or the version only)."""
    here = Path(__file__).resolve().parent
    info: dict[str, Any] = {"package_version": _version("sharpness"), "git_commit": None,
                            "dirty": None, "dirty_files": []}
    try:
        git = ["git", "-C", str(here), *SAFE_GIT_OPTIONS]
        commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True, timeout=10).stdout.strip()
        status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                                check=True, capture_output=True, text=True, timeout=10).stdout
        info.update(git_commit=commit, dirty=bool(status.strip()),
                    dirty_files=[line[3:] for line in status.splitlines() if line.strip()])
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str | None]:
    """Versions of the packages whose behaviour decides the numbers."""
    return {name: _version(name) for name in TRACKED_PACKAGES}


def device_info() -> dict[str, Any]:
    """The device the numbers were computed on (CPU model / CUDA device, thread count)."""
    info: dict[str, Any] = {"host": socket.gethostname(), "platform": platform.platform(),
                            "python": platform.python_version(), "cpu": platform.processor()
                            or platform.machine(), "cpu_count": os.cpu_count()}
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["cuda"] = torch.cuda.get_device_name(0)
    return info
