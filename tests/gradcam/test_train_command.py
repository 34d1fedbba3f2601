"""`sharpness gradcam train`: one job trains every optimizer of a data set (or those named),
each into OUT/<optimizer>/ under its own run lock; an unknown optimizer is named."""

from __future__ import annotations

import argparse
import json

import pytest

from sharpness.commands import gradcam as gradcam_cmd
from sharpness.errors import ConfigError
from sharpness.gradcam import study

PARAMS = {"datasets": {"mnist": {}}, "optimizers": {"sgd": {}, "sam": {}, "sam_linf": {}},
          "alphas": [1.0], "seeds": [0], "train": {}, "panel": {}}


def _args(tmp_path, optimizer=None):
    return argparse.Namespace(action="train", config_file=None, params=json.dumps(PARAMS),
                              dataset="mnist", data_root="data",
                              optimizer=optimizer, out=str(tmp_path / "runs" / "mnist"),
                              threads=1)


def _fake(seen, written):
    def train_group(params, dataset, optimizer, out, threads=None, *, write=True):
        assert write is False and not written  # every group trains before any is written
        seen.append((dataset, optimizer, out.relative_to(out.parents[2]).as_posix()))
        return {"runs": [{"alpha": 1.0, "seed": 0, "status": "ok", "final_test_acc": 0.5}]}

    def write_group(params, out, summary, config_file=None):
        written.append(out.name)
    return train_group, write_group


def _patch(monkeypatch, seen, written=None):
    train_group, write_group = _fake(seen, [] if written is None else written)
    monkeypatch.setattr(study, "train_group", train_group)
    monkeypatch.setattr(study, "write_group", write_group)


def test_every_optimizer_goes_to_its_own_folder(tmp_path, monkeypatch, capsys):
    seen: list = []
    written: list = []
    _patch(monkeypatch, seen, written)
    assert gradcam_cmd._train(_args(tmp_path)) == 0
    assert seen == [("mnist", o, f"runs/mnist/{o}") for o in ("sgd", "sam", "sam_linf")]
    assert written == ["sgd", "sam", "sam_linf"]
    assert "mnist sam_linf alpha=1 seed=0: ok, test acc 0.500" in capsys.readouterr().out


def test_only_the_named_optimizers(tmp_path, monkeypatch):
    seen: list = []
    _patch(monkeypatch, seen)
    gradcam_cmd._train(_args(tmp_path, ["sam"]))
    assert [o for _, o, _ in seen] == ["sam"]


def test_an_unknown_optimizer_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "train_group", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(ConfigError, match="--optimizer adam: not in the params' optimizers"):
        gradcam_cmd._train(_args(tmp_path, ["sgd", "adam"]))
