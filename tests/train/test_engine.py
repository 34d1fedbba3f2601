"""Training engine: exact kill-and-resume, determinism, divergence, loss goal, CLI, CUDA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sharpness.errors import ConfigError
from sharpness.io import read_json, read_jsonl
from sharpness.optim import OPTIMIZERS
from sharpness.train import TrainHooks, load_trained_model, train, validate_config
from tests.killing import Killed, kill_at

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread

REPO = Path(__file__).resolve().parents[2]

# a small but complete mini-batch run: BatchNorm ResNet, SAM, crop/flip/Cutout, label
# smoothing, cosine lr with warm-up, step rows: every source of state a resume must restore
MINI = {
    "dataset": "mnist_embedded", "data_root": str(REPO / "data"), "train_size": 96,
    "test_size": 64, "model": "resnet18", "width": 0.0625, "optimizer": "sam",
    "opt_hparams": {"rho": 0.05}, "epochs": 3, "batch_size": 32, "lr": 0.05,
    "warmup_steps": 2, "label_smoothing": 0.1,
    "augment": {"crop": 2, "flip": True, "cutout": 6}, "log_every": 2, "seed": 3,
}
# full-batch GD on an FCN with the square loss
FULL = {
    "dataset": "mnist_embedded", "data_root": str(REPO / "data"), "train_size": 128,
    "test_size": 64, "model": "fcn", "model_kwargs": {"hidden": 32, "depth": 2},
    "optimizer": "sgd", "momentum": 0.0, "weight_decay": 0.0, "lr": 0.05, "mode": "fullbatch",
    "loss": "mse", "max_steps": 30, "checkpoint_every": 4, "eval_every": 10, "seed": 1,
}


def _same_model(a: Path, b: Path) -> None:
    sa = torch.load(a / "model.pt", weights_only=True)["state_dict"]
    sb = torch.load(b / "model.pt", weights_only=True)["state_dict"]
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k


def _final_without_id(path: Path) -> dict:
    return read_json(path / "final.json")


@pytest.mark.e2e  # a whole mini-batch run killed and resumed (full-batch: the fast tier)
def test_minibatch_kill_and_resume_is_bit_identical(tmp_path):
    ref = tmp_path / "ref"
    train(MINI, ref)
    run = tmp_path / "run"
    with pytest.raises(Killed):
        train(MINI, run, hooks=kill_at(5))  # mid-epoch 2 (3 steps an epoch)
    assert read_json(run / "provenance.json")["status"] == "failed"
    assert (run / "checkpoint.pt").exists() and not (run / "final.json").exists()
    rows_before = read_jsonl(run / "metrics.jsonl")
    assert rows_before[-1]["step"] == 4  # a step row written after the checkpoint
    final = train(MINI, run)
    assert (run / "metrics.jsonl").read_bytes() == (ref / "metrics.jsonl").read_bytes()
    assert final == _final_without_id(ref)
    _same_model(ref, run)
    prov = read_json(run / "provenance.json")
    assert prov["status"] == "ok" and prov["resumed_from_step"] == 3


def test_fullbatch_kill_and_resume_is_bit_identical(tmp_path):
    ref, run = tmp_path / "ref", tmp_path / "run"
    train(FULL, ref)
    with pytest.raises(Killed):
        train(FULL, run, hooks=kill_at(11))
    train(FULL, run)
    assert (run / "metrics.jsonl").read_bytes() == (ref / "metrics.jsonl").read_bytes()
    assert _final_without_id(run) == _final_without_id(ref)
    _same_model(ref, run)


def test_same_seed_same_metrics_other_seed_differs(tmp_path):
    cfg = dict(MINI, epochs=1)
    train(cfg, tmp_path / "a")
    train(cfg, tmp_path / "b")
    train(dict(cfg, seed=4), tmp_path / "c")
    a, b, c = ((tmp_path / d / "metrics.jsonl").read_bytes() for d in "abc")
    assert a == b
    assert a != c
    # each run records its draw at its start, signed: same seed, same draw; another, another
    fa, fb, fc = (read_json(tmp_path / d / "final.json") for d in "abc")
    for key in ("init_sha256", "order_sha256"):
        assert fa[key] == fb[key] != fc[key]
        assert read_json(tmp_path / "a" / "provenance.json")[key] == fa[key]


def test_divergence_is_recorded_not_raised(tmp_path):
    cfg = dict(FULL, lr=50.0, max_steps=200)
    final = train(cfg, tmp_path)
    assert final["status"] == "diverged"
    step = final["diverged_step"]
    assert isinstance(step, int) and 0 < step < 200
    prov = read_json(tmp_path / "provenance.json")
    assert prov["status"] == "diverged" and prov["diverged_step"] == step
    rows = read_jsonl(tmp_path / "metrics.jsonl")
    assert rows[-1]["kind"] == "diverged" and rows[-1]["step"] == step
    # the saved model holds the last finite iterate, usable downstream
    model = load_trained_model(tmp_path)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_divergence_threshold_in_minibatch_mode(tmp_path):
    final = train(dict(MINI, epochs=2, diverge_loss=1e-3), tmp_path)
    assert final["status"] == "diverged" and final["diverged_step"] == 0


def test_fullbatch_stops_at_loss_goal(tmp_path):
    goal = 0.3
    cfg = dict(FULL, loss_goal=goal, max_steps=300, checkpoint_every=0, lr=0.05)
    final = train(cfg, tmp_path)
    assert final["reason"] == "loss_goal" and final["status"] == "ok"
    rows = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if r["kind"] == "step"]
    assert rows[-1]["stop"] == "loss_goal" and rows[-1]["train_loss"] < goal
    assert all(r["train_loss"] >= goal for r in rows[:-1])
    assert final["steps"] == rows[-1]["step"] < 300
    # the saved model is the iterate that met the goal (the update after it was not taken)
    assert final["final_train_loss"] == pytest.approx(rows[-1]["train_loss"], rel=1e-5)


def test_fullbatch_max_steps_and_sharpness_hook(tmp_path):
    from functools import partial

    from sharpness.curvature.spectrum import top_eigenvalue_on_data

    hook = partial(top_eigenvalue_on_data, mode="eval")
    cfg = dict(FULL, max_steps=6, sharpness_every=3, log_every=0, eval_every=0)
    final = train(cfg, tmp_path, hooks=TrainHooks(sharpness=hook), progress=True)
    assert final["reason"] == "max_steps" and final["steps"] == 6
    rows = read_jsonl(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 3, 6]
    assert all(r["sharpness"] > 0 for r in rows)


def test_finished_run_is_not_rerun_and_changed_config_starts_over(tmp_path, caplog):
    cfg = dict(FULL, max_steps=5)
    first = train(cfg, tmp_path)
    mtime = (tmp_path / "metrics.jsonl").stat().st_mtime_ns
    assert train(cfg, tmp_path) == first
    assert (tmp_path / "metrics.jsonl").stat().st_mtime_ns == mtime
    (tmp_path / "final.json").unlink()  # as if killed after its last checkpoint
    changed = train(dict(cfg, lr=0.3), tmp_path)
    assert "not reused" in caplog.text and "settings differ" in caplog.text
    fresh = train(dict(cfg, lr=0.3), tmp_path / "fresh")
    assert changed["config_id"] == fresh["config_id"] != first["config_id"]
    assert read_jsonl(tmp_path / "metrics.jsonl") == read_jsonl(tmp_path / "fresh/metrics.jsonl")


def test_outputs_for_downstream_use(tmp_path):
    cfg = dict(MINI, epochs=1, classes=[3, 5, 7])
    final = train(cfg, tmp_path)
    assert final["num_classes"] == 3
    for name in ("metrics.jsonl", "final.json", "provenance.json", "model.pt", "config.json",
                 "timing.jsonl", "cache_key.json"):
        assert (tmp_path / name).exists(), name
    assert not (tmp_path / "checkpoint.pt").exists()  # a finished run drops its checkpoint
    model = load_trained_model(tmp_path)
    x = torch.rand(2, 1, 28, 28)
    assert model(x).shape == (2, 3)
    assert hasattr(model.net, "gradcam_layer")
    prov = read_json(tmp_path / "provenance.json")
    assert prov["data"][0]["name"] == "mnist_embedded" and prov["data"][0]["sha256"]
    # fine-tuning from it: the body loads, the new head keeps its own init
    ft = train(dict(cfg, classes=[0, 1], init_from=str(tmp_path / "model.pt"), epochs=1,
                    lr=1e-9, weight_decay=0.0, momentum=0.0), tmp_path / "ft")
    assert ft["num_classes"] == 2
    body = "net.conv1.weight"
    tuned = load_trained_model(tmp_path / "ft").state_dict()
    torch.testing.assert_close(tuned[body], model.state_dict()[body], rtol=0, atol=1e-6)
    # excluded prefixes keep the fresh init (three classes again: the head shape matches)
    ex = train(dict(cfg, init_from=str(tmp_path / "model.pt"), init_exclude=["net.fc"],
                    lr=1e-9, weight_decay=0.0, momentum=0.0), tmp_path / "ex")
    assert ex["status"] == "ok"
    exm = load_trained_model(tmp_path / "ex").state_dict()
    assert torch.allclose(exm[body], model.state_dict()[body], atol=1e-6)
    assert not torch.allclose(exm["net.fc.weight"], model.state_dict()["net.fc.weight"])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizer_trains_through_the_engine(tmp_path, name):
    # LE-SAM's official budget is 0 in epoch 0 (warm-up from 0): no warm-up here
    hp = {"eigensam": {"eig_every": 1, "power_iters": 2},
          "lesam": {"warmup_epochs": 0}}.get(name, {})
    cfg = dict(MINI, model="cnn", width=0.25, epochs=1, batch_size=48, optimizer=name,
               opt_hparams=hp, log_every=1)
    final = train(cfg, tmp_path)
    assert final["status"] == "ok" and final["steps"] == 2
    rows = read_jsonl(tmp_path / "metrics.jsonl")
    assert [r["kind"] for r in rows] == ["step", "step", "epoch"]
    assert all("opt_grad_norm" in r for r in rows)
    if name != "sgd":
        assert rows[0]["opt_radius"] > 0


@pytest.mark.parametrize("patch,match", [
    ({"lr_": 0.1}, "unknown key.*'lr_'"),
    ({"lr": "fast"}, "'lr': expected int or float"),
    ({"model": "resnet19"}, "'model': unknown model"),
    ({"model_kwargs": {"depht": 2}}, "'model_kwargs'.*depht"),
    ({"opt_hparams": {"rhoo": 0.1}}, "'opt_hparams'.*rhoo"),
    ({"optimizer": "adamw"}, "'optimizer': unknown optimizer"),
    ({"augment": {"cutuot": 8}}, "'augment'.*cutuot"),
    ({"mode": "online"}, "'mode'"),
    ({"epochs": 0}, "'epochs': must be positive"),
    ({"label_smoothing": 0.1, "loss": "mse"}, "'label_smoothing'"),
    ({"loss_goal": 0.1}, "'loss_goal': only applies"),
])
def test_config_errors_name_the_key(patch, match):
    with pytest.raises(ConfigError, match=match):
        validate_config({**MINI, **patch})
    with pytest.raises(ConfigError, match="'dataset': is required"):
        validate_config({"model": "cnn"})


def test_cli_train(tmp_path, capsys):
    from sharpness.cli import main

    cfg = dict(FULL, max_steps=3)
    code = main(["train", "--config", json.dumps(cfg), "--out", str(tmp_path / "r"),
                 "--threads", "1", "--set", "lr=0.1"])
    assert code == 0
    assert "status=ok" in capsys.readouterr().out
    assert read_json(tmp_path / "r" / "config.json")["lr"] == 0.1
    assert main(["train", "--config", '{"dataset": "x"}', "--out", str(tmp_path / "s")]) == 2
    assert "'model': is required" in capsys.readouterr().err


@pytest.mark.gpu
def test_cuda_bf16_run_is_deterministic(tmp_path):
    cfg = dict(MINI, epochs=2, device="cuda", bf16=True)
    a = train(cfg, tmp_path / "a")
    train(cfg, tmp_path / "b")
    assert a["status"] == "ok" and a["final_train_loss"] is not None
    prov = read_json(tmp_path / "a" / "provenance.json")
    assert prov["device_used"].startswith("cuda") and prov["bf16"] is True
    assert (tmp_path / "a" / "metrics.jsonl").read_bytes() == \
        (tmp_path / "b" / "metrics.jsonl").read_bytes()
