"""A Grad-CAM group cut mid-run resumes the cut run from its checkpoint and ends as an uncut
group; a group whose finished ``runs.json`` was removed (a forced rerun) trains again."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharpness.gradcam.study import RUNS_FILE, run_config, run_name, train_group
from sharpness.io import read_json
from sharpness.train import train
from tests.killing import Killed, kill_at

pytestmark = pytest.mark.usefixtures("one_thread")

REPO = Path(__file__).resolve().parents[2]
# 64 images, batch 32: two steps an epoch, a checkpoint after every epoch
PARAMS = {
    "datasets": {"mnist": {"name": "mnist_embedded", "label": "MNIST",
                           "background": {"rule": "threshold", "threshold": 0.2}}},
    "optimizers": {"sgd": {"name": "sgd", "label": "SGD", "hparams": {}}},
    "alphas": [1.0], "seeds": [0],
    "train": {"model": "cnn", "model_kwargs": {"channels": 2, "depth": 2}, "epochs": 2,
              "batch_size": 32, "lr": 0.05, "momentum": 0.0, "weight_decay": 0.0,
              "eval_every": 0, "checkpoint_every": 1, "device": "cpu", "train_size": 64,
              "test_size": 64, "data_root": str(REPO / "data")},
    "panel": {"per_class": 1, "seed": 0, "show": 1},
}
RUN = run_name(1.0, 0)


def test_a_cut_group_resumes_and_a_forced_one_starts_over(tmp_path):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    train_group(PARAMS, "mnist", "sgd", ref, threads=1)
    with pytest.raises(Killed):  # cut in epoch 2, after the checkpoint of epoch 1
        train(run_config(PARAMS, "mnist", "sgd", 1.0, 0), cut / RUN, hooks=kill_at(3))
    assert (cut / RUN / "checkpoint.pt").is_file() and not (cut / RUNS_FILE).exists()
    train_group(PARAMS, "mnist", "sgd", cut, threads=1)
    resumed = read_json(cut / RUN / "provenance.json")
    assert resumed["resumed_from_step"] == 2
    assert read_json(cut / RUN / "final.json") == read_json(ref / RUN / "final.json")
    assert (cut / RUN / "metrics.jsonl").read_bytes() == (ref / RUN / "metrics.jsonl").read_bytes()

    marker = cut / RUN / "stale-marker"
    marker.write_text("left by the earlier run")
    train_group(PARAMS, "mnist", "sgd", cut, threads=1)  # runs.json there: runs reused
    assert marker.exists()
    (cut / RUNS_FILE).unlink()  # what -R/--forcerun does before it reruns the job
    train_group(PARAMS, "mnist", "sgd", cut, threads=1)
    assert not marker.exists()  # the run folder was deleted and trained again
    assert read_json(cut / RUN / "provenance.json")["resumed_from_step"] is None
    assert read_json(cut / RUN / "final.json") == read_json(ref / RUN / "final.json")
    assert read_json(cut / RUNS_FILE)["runs"][0]["status"] == "ok"
