"""benchmarks/gpu_check.sh --tiny: the prepared GPU benchmark runs end to end on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.workflow  # a prepared command run end to end (it prices the paper profile too)
def test_gpu_check_tiny_mode_runs_on_the_cpu(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--tiny"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "bench.json").read_text())
    assert set(result["images_per_s"]) == {"sgd", "sam", "lesam"}
    assert all(v > 0 for v in result["images_per_s"].values())
    assert set(result["ratios"]) == {"sam/sgd", "lesam/sam"}
    assert all(e["steps"] == 4 and e["seconds"] > 0 for e in result["epoch"].values())
    assert result["device"] == "CPU" and result["bf16"] is False
    assert "table_imagenet" in (tmp_path / "cost_paper.md").read_text()


def test_gpu_check_names_the_packages_it_lacks(tmp_path):
    """Run from src/ with a Python that has no site packages: the check names each package
    it needs (PyTorch and the few wheels beside it) and stops before doing anything."""
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    python.chmod(0o755)
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": str(python)}
    proc = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--tiny"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    for wheel in ("torch", "numpy", "scipy", "pyyaml", "tqdm"):
        assert wheel in proc.stderr
    assert not (tmp_path / "out" / "bench.json").exists()
