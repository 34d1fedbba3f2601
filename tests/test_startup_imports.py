"""A job's start-up imports only what it uses.

Every Snakemake job is a fresh `sharpness` process, so a module imported on the way pays its
import cost once per job: a profile of 100+ jobs pays it 100+ times. scipy.stats with pandas
(the planner's, about 1 CPU-s) once came in through the parser of `sharpness plan`, and
torchvision (about 1.5 CPU-s) through the model registry, in every training job.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: starts fresh interpreters and times their imports: second tier
pytestmark = pytest.mark.e2e

#: modules a CLI start or a CNN training job has no use for (torch._dynamo: torch.optim's
#: step and torch.use_deterministic_algorithms import it, about 0.9 CPU-s, for nothing a job
#: that does not compile uses; sharpness.optim.eager avoids it)
HEAVY = ("scipy.stats", "pandas", "torchvision", "torch._dynamo")


def _loaded(argv: list[str], cwd: Path) -> set[str]:
    """The modules of HEAVY that ``sharpness <argv>`` had imported when it finished."""
    probe = (
        "import sys\n"
        f"sys.argv = ['sharpness', *{argv!r}]\n"
        "from sharpness.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=cwd, check=True).stdout
    line = [x for x in out.splitlines() if x.startswith("LOADED ")][-1]
    return set(eval(line.removeprefix("LOADED ")))  # a list literal printed just above


def test_the_cli_parser_imports_nothing_heavy(tmp_path: Path) -> None:
    assert _loaded(["--help"], tmp_path) == set()


def test_a_cnn_training_job_imports_nothing_heavy(tmp_path: Path) -> None:
    cfg = {"dataset": "mnist_embedded", "model": "cnn", "epochs": 1, "train_size": 128,
           "test_size": 128, "batch_size": 64}
    argv = ["train", "--config", json.dumps(cfg), "--set", f"data_root={tmp_path / 'data'}",
            "--out", str(tmp_path / "run"), "--threads", "1"]
    assert _loaded(argv, tmp_path) == set()
    assert json.loads((tmp_path / "run" / "final.json").read_text())["status"] == "ok"


def test_the_registry_still_builds_a_torchvision_model() -> None:
    from sharpness.models import MODELS, ScaledResNet, build_model

    model = build_model("resnet18", num_classes=10, in_channels=3, image_size=32, width=0.0625)
    assert isinstance(model, ScaledResNet)
    assert "resnet18" in MODELS
