"""Shared fixtures: the repository root and the Python environment the suite runs in."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

os.environ.setdefault("OMP_NUM_THREADS", "2")


#: the environment variables that choose the signing key and the trusted keys
KEY_VARIABLES = ("SHARPNESS_SIGNING_KEY", "SHARPNESS_TRUSTED_DIR", "SHARPNESS_TRUSTED_KEYS")
#: their values before the suite replaced them: a test that reads the checkout's own build
#: (made by `make` before the workflow tier) runs its commands as the user who built it
USER_KEYS: dict[str, str | None] = {}


def user_environment() -> dict[str, str]:
    """The environment with the user's own key settings (not the suite's), for commands a
    test runs on a build the user made."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    env.update({k: v for k, v in USER_KEYS.items() if v is not None})
    return env


def pytest_configure(config: pytest.Config) -> None:
    """Records are signed (sharpness.runs.signing): the suite, and every process it starts,
    signs with a key made for this session in a temporary folder, never the developer's
    ``~/.config/sharpness/signing_key``; no key file of the developer is trusted either."""
    import tempfile

    keys = Path(tempfile.mkdtemp(prefix="sharpness-test-keys-"))
    USER_KEYS.update({k: os.environ.get(k) for k in KEY_VARIABLES})
    os.environ["SHARPNESS_SIGNING_KEY"] = str(keys / "signing_key")
    os.environ["SHARPNESS_TRUSTED_DIR"] = str(keys / "trusted")  # none: never the developer's
    os.environ.pop("SHARPNESS_TRUSTED_KEYS", None)


@pytest.fixture(autouse=True)
def _own_working_folder(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in an empty folder of its own: a relative path a test (or the code it
    calls) reads never lands on the checkout's own `results/` or `figures/`, so the suite
    passes alike on a fresh clone and where `make` has built. Tests name repository files
    through the `repo` fixture (or :data:`REPO`)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session", autouse=True)
def _decision_files_once_per_tree() -> Iterator[None]:
    """:func:`sharpness.claims.registration_decision.decision_files` computed once per package
    tree and worker: it parses every deciding module and what they import (about 0.2 s a
    call, some 70 calls in the fast tier), and its answer depends on the files' contents
    alone, so it is remembered under a SHA-256 of every ``.py`` and ``.yaml`` file of the
    tree (15 ms). A test that edits a module of a copied tree gets a fresh answer. The
    module's own per-file parse cache waits for the next registration (it is deciding
    code: a change to it is a deviation of every registration)."""
    import hashlib

    from sharpness.claims import registration, registration_decision

    real = registration_decision.decision_files
    answers: dict[tuple[str, str], dict[str, str]] = {}

    def remembered(package: Path | None = None) -> dict[str, str]:
        root = package or Path(registration_decision.__file__).resolve().parents[1]
        digest = hashlib.sha256()
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts \
                    and path.is_file():
                digest.update(path.relative_to(root).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
        key = (str(root), digest.hexdigest())
        if key not in answers:
            answers[key] = real(package)
        return dict(answers[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registration_decision, "decision_files", remembered)
        patch.setattr(registration, "decision_files", remembered)
        yield


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One torch intra-op thread and one BLAS thread for the test: tiny models run faster so
    and leave the other core to a parallel worker (a module asks for it through
    ``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        yield
    torch.set_num_threads(before)


@pytest.fixture
def in_workflow_copy(tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> Path:
    """For a command that runs from the repository root: the working folder becomes a fresh
    copy of the workflow's files (Snakefile, workflow/, envs/, profiles/), with no results."""
    from tests.pipeline.helpers import copy_workflow

    work = copy_workflow(REPO, tmp_path_factory.mktemp("checkout"))
    monkeypatch.chdir(work)
    return work


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


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave unimported a test module whose top-level marks make `-m` drop all its tests
    (tests/module_marks.py says why: the fast tier's workers would import the second tier's
    modules only to drop them). Without `-m`, every module is collected as usual."""
    markexpr = config.getoption("markexpr", "")
    if not markexpr or collection_path.suffix != ".py" or \
            not collection_path.name.startswith("test_"):
        return None
    from tests.module_marks import dropped_by, read_marks

    return True if dropped_by(read_marks(collection_path), markexpr) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests with a reason when CUDA is absent."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none is present on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
