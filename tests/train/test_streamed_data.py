"""Training and evaluation on a data set streamed from image folders (ImageNet layout): the
engine's DataLoader path with worker processes, the model's ImageNet input statistics, and
evaluation through a DataLoader; the images are never held as one tensor."""

from __future__ import annotations

import pytest

from sharpness.io import read_jsonl
from sharpness.train import train
from tests.paper import formats


@pytest.fixture
def imagenet(tmp_path, monkeypatch):
    folder = formats.write_imagenet(tmp_path / "data", classes=3, train=4, val=2)
    monkeypatch.setenv("SHARPNESS_UNVERIFIED_DATA", str(tmp_path / "data"))
    return folder


def test_imagenet_layout_trains_through_the_loader_path(tmp_path, imagenet):
    cfg = {"dataset": "imagenet", "data_root": str(imagenet), "model": "cnn",
           "model_kwargs": {"channels": 4}, "epochs": 1, "batch_size": 5, "lr": 0.01,
           "augment": {"crop": 0, "flip": True, "cutout": 0}, "loader_workers": 2,
           "device": "cpu", "checkpoint_every": 0, "optimizer": "sam",
           "opt_hparams": {"rho": 0.05}, "log_every": 1}
    final = train(cfg, tmp_path / "run")
    assert final["status"] == "ok" and final["steps"] == 3  # ceil(12 / 5)
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    epoch = [r for r in rows if r["kind"] == "epoch"][0]
    assert 0 <= epoch["test_acc"] <= 1 and epoch["test_loss"] > 0
    assert final["final_test_acc"] in {k / 6 for k in range(7)}  # 6 validation images
    import json
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    data = prov["data"][0]
    assert data["name"] == "imagenet" and "UNVERIFIED" in data["note"]
    with pytest.raises(Exception, match="data_on_device"):
        train({**cfg, "data_on_device": True}, tmp_path / "run2")
