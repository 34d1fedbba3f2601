"""The cache policy: keys from settings + code, reuse only on an exact match, safe checkpoints.

Each scenario here failed before `sharpness.runs.cache` existed: a flow of other settings was
returned from the same folder, a code change resumed a run at its last checkpoint, a
checkpoint could hold any pickled object, and atomic writes made 0600 files.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from pathlib import Path

import pytest
import torch

from sharpness.io import atomic_write_json, read_json, read_jsonl
from sharpness.runs import cache
from sharpness.train import train
from sharpness.train.checkpoint import UnsafeCheckpointError
from tests.killing import Killed, kill_at

REPO = Path(__file__).resolve().parents[1]
FULL = {
    "dataset": "mnist_embedded", "data_root": str(REPO / "data"), "train_size": 64,
    "test_size": 32, "model": "fcn", "model_kwargs": {"hidden": 16, "depth": 2},
    "optimizer": "sgd", "momentum": 0.0, "weight_decay": 0.0, "lr": 0.05, "mode": "fullbatch",
    "loss": "mse", "max_steps": 12, "checkpoint_every": 4, "seed": 1,
}


@pytest.fixture()
def package_copy(tmp_path, monkeypatch):
    """A copy of the sharpness sources that the code fingerprint reads instead of the real
    ones, so a test can 'edit the code' without touching the checkout."""
    root = tmp_path / "src" / "sharpness"
    shutil.copytree(cache.package_dir(), root,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    monkeypatch.setattr(cache, "package_dir", lambda: root)
    return root


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit\n")


# -- the source closure ------------------------------------------------------------------------

def test_closure_follows_imports_and_nothing_else():
    names = {str(p.relative_to(cache.package_dir())) for p in
             cache.source_files("sharpness.eos.sweep")}
    assert {"eos/sweep.py", "eos/flow.py", "eos/integrators.py", "train/engine.py", "eos/measures.py"} <= names
    assert "eos/figures/phase.py" not in names and "plots/save.py" not in names
    figures = {str(p.relative_to(cache.package_dir())) for p in
               cache.source_files("sharpness.eos.figures")}
    assert {"eos/figures/__init__.py", "eos/figures/phase.py", "plots/save.py"} <= figures
    theory_plots = {str(p.relative_to(cache.package_dir())) for p in
                    cache.source_files("sharpness.minorfirst.plots")}
    assert "eos/flow.py" not in theory_plots


def test_fingerprint_sees_exactly_the_edited_closure(package_copy):
    flow_before = cache.code_fingerprint("sharpness.eos.sweep")
    fig_before = cache.code_fingerprint("sharpness.eos.figures", shallow=["sharpness.cli"])
    diagonal_before = cache.code_fingerprint("sharpness.diagonal.discrete")
    _edit(package_copy / "eos" / "flow.py")  # an uncommitted edit counts as it is on disk
    assert cache.code_fingerprint("sharpness.eos.sweep") != flow_before
    assert cache.code_fingerprint("sharpness.diagonal.discrete") == diagonal_before
    _edit(package_copy / "plots" / "save.py")
    assert cache.code_fingerprint("sharpness.eos.figures", shallow=["sharpness.cli"]) \
        != fig_before


def test_fingerprint_includes_package_versions(monkeypatch):
    before = cache.code_fingerprint("sharpness.io")
    monkeypatch.setattr(cache, "numeric_versions", lambda: {"torch": "0.0-other"})
    assert cache.code_fingerprint("sharpness.io") != before


def test_claim_dir_reuses_only_an_exact_key_and_says_why(tmp_path, caplog):
    key = cache.cache_key("thing", {"a": 1, "b": {"c": "x"}}, ["sharpness.io"])
    assert cache.claim_dir(tmp_path, key, stale=["out.json"], what="thing") is False
    atomic_write_json(tmp_path / "out.json", {"v": 1})
    assert cache.claim_dir(tmp_path, key, stale=["out.json"], what="thing") is True
    other = cache.cache_key("thing", {"a": 1, "b": {"c": "y"}}, ["sharpness.io"])
    with caplog.at_level(logging.WARNING):
        assert cache.claim_dir(tmp_path, other, stale=["out.json"], what="thing") is False
    assert not (tmp_path / "out.json").exists()
    assert "b.c: 'x' -> 'y'" in caplog.text
    assert cache.read_key(tmp_path)["digest"] == other["digest"]


# -- the training engine ----------------------------------------------------------------------


def test_rerun_after_a_code_change_trains_from_step_zero(tmp_path, package_copy, caplog):
    torch.set_num_threads(1)
    with pytest.raises(Killed):
        train(FULL, tmp_path, hooks=kill_at(6))
    assert (tmp_path / "checkpoint.pt").exists()
    _edit(package_copy / "optim" / "sam.py")  # the engine imports it: the key changes
    with caplog.at_level(logging.WARNING):
        final = train(FULL, tmp_path)
    assert "code changed" in caplog.text
    assert read_json(tmp_path / "provenance.json")["resumed_from_step"] is None
    steps = [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")]
    assert steps[0] == 0 and steps == sorted(steps) and final["steps"] == FULL["max_steps"]
    assert not (tmp_path / "checkpoint.pt").exists()  # finished: the checkpoint is gone
    # finished and same key: reused as is; after another edit: trained again from step 0
    mtime = (tmp_path / "final.json").stat().st_mtime_ns
    assert train(FULL, tmp_path) == final
    assert (tmp_path / "final.json").stat().st_mtime_ns == mtime
    _edit(package_copy / "train" / "engine.py")
    train(FULL, tmp_path)
    assert (tmp_path / "final.json").stat().st_mtime_ns != mtime
    assert read_json(tmp_path / "provenance.json")["resumed_from_step"] is None


def test_same_key_still_resumes_from_the_checkpoint(tmp_path):
    torch.set_num_threads(1)
    with pytest.raises(Killed):
        train(FULL, tmp_path, hooks=kill_at(6))
    train(FULL, tmp_path)
    assert read_json(tmp_path / "provenance.json")["resumed_from_step"] == 4


class _Payload:  # any object beyond tensors and plain containers
    def __reduce__(self):
        return (os.getcwd, ())


@pytest.mark.parametrize("resealed", [False, True])
def test_a_checkpoint_holding_a_pickled_object_is_never_loaded(tmp_path, caplog, resealed):
    """Not the file its record hashed: never unpickled, the run starts over. Even
    with its hash recorded again, ``weights_only`` refuses it and the run starts over."""
    from sharpness.runs.seal import seal
    from sharpness.train.checkpoint import safe_load

    torch.set_num_threads(1)
    with pytest.raises(Killed):
        train(FULL, tmp_path, hooks=kill_at(6))
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    state["extra"] = _Payload()
    torch.save(state, tmp_path / "checkpoint.pt")
    with pytest.raises(UnsafeCheckpointError, match="checkpoint.pt"):
        safe_load(tmp_path / "checkpoint.pt")
    if resealed:
        seal(tmp_path, "checkpoint.pt")
    with caplog.at_level(logging.WARNING, logger="sharpness.runs.seal"):
        train(FULL, tmp_path)
    reason = "refusing to load it" if resealed else "differs from the recorded"
    assert "checkpoint.pt is not used" in caplog.text and reason in caplog.text
    assert read_json(tmp_path / "provenance.json")["resumed_from_step"] is None


def test_atomic_writes_use_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        path = atomic_write_json(tmp_path / "x.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
