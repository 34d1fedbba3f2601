"""A small finished build for the crate tests: the workflow's files, one real run, its figure
and a claims ledger built under the quick profile's committed registration."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sharpness.cli import main

#: the quick profile's l1_maxmargin settings, at a second's size
L1 = {"mu": [1.0, 2.0], "multi": {"n": 10, "scales": [0.5, 1.0, 2.0], "noise": 0.5, "seed": 4},
      "alphas": [0.1, 1.0], "rhos": [0.1, 0.5], "h": 0.1, "steps": 400, "record_every": 40}
FIGURE = "figures/minorfirst/l1_maxmargin.pdf"


def make_build(repo: Path, root: Path) -> Path:
    """`minorfirst run` and `plot` of l1_maxmargin and `claims build`, as the workflow runs
    them, in ``root`` beside a copy of the workflow's files and the quick registration."""
    shutil.copy(repo / "Snakefile", root / "Snakefile")
    for folder in ("workflow", "envs", "profiles"):
        shutil.copytree(repo / folder, root / folder)
    registration = root / "docs/registration/quick.json"
    registration.parent.mkdir(parents=True)
    shutil.copy(repo / "docs/registration/quick.json", registration)
    run = root / "results/minorfirst/l1_maxmargin"
    assert main(["minorfirst", "run", "l1_maxmargin", "--params", json.dumps(L1),
                 "--out", str(run)]) == 0
    assert main(["minorfirst", "plot", "l1_maxmargin", "--run", str(run),
                 "--out", str(root / FIGURE)]) == 0
    assert main(["claims", "build", "--figures", str(root / "figures"), "--profile", "quick",
                 "--registration", str(registration)]) == 0
    return root


@pytest.fixture(scope="package")
def build(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished small build (see :func:`make_build`), shared by the package's tests."""
    return make_build(repo, tmp_path_factory.mktemp("build"))
