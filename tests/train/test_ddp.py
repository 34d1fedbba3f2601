"""DistributedDataParallel on the CPU: 2 gloo processes launched by torchrun, as the rule does.

* a DDP run equals a single-process reference that applies the per-shard perturbation rule
  (each half of the batch perturbs with its own gradient, perturbed gradients averaged,
  BatchNorm running statistics from shard 0), and differs from the global-perturbation run;
* a 2-process run killed (SIGKILL of rank 0) resumes to the same numbers, bit for bit;
* settings DDP cannot honour fail with the key named.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sharpness.curvature.modes import frozen_bn_stats
from sharpness.errors import ConfigError
from sharpness.io import read_json, read_jsonl
from sharpness.train import per_example_loss, train, validate_config
from sharpness.train.data_prep import prepare_data
from sharpness.train.device_data import DeviceBatches
from sharpness.train.model_io import build_run_model

REPO = Path(__file__).resolve().parents[2]

# tiny: a BatchNorm ResNet at 1/16 width on 48 MNIST images, batch 16 (8 a process)
DDP_RUN = {
    "dataset": "mnist_embedded", "data_root": str(REPO / "data"), "train_size": 48,
    "test_size": 32, "model": "resnet18", "width": 0.0625, "optimizer": "sam",
    "opt_hparams": {"rho": 0.2}, "epochs": 1, "batch_size": 16, "lr": 0.05,
    "lr_schedule": "constant", "momentum": 0.9, "weight_decay": 5e-4,
    "augment": {"crop": 2, "flip": True, "cutout": 0}, "seed": 4, "device": "cpu",
    "gpus": 2,
}


def _torchrun(cfg: dict, out: Path, env: dict[str, str] | None = None,
              check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc-per-node", str(cfg["gpus"]), "-m", "sharpness.cli", "train",
           "--config", json.dumps(cfg), "--out", str(out), "--threads", "1"]
    full_env = {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'src'}", "OMP_NUM_THREADS": "1",
                **(env or {})}
    proc = subprocess.run(cmd, cwd=REPO, env=full_env, capture_output=True, text=True,
                          timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"torchrun failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc


def _state(run: Path) -> dict[str, torch.Tensor]:
    return torch.load(run / "model.pt", weights_only=True)["state_dict"]


def _reference_sharded_sam(cfg: dict, world: int, rule: str = "local"
                           ) -> tuple[dict[str, torch.Tensor], float]:
    """One process, plain torch: SAM on ``world`` shards of each batch, each shard with its
    own BatchNorm batch statistics; the perturbation from each shard's own gradient
    (``local``) or from their mean (``global``); perturbed gradients averaged; running
    statistics those of shard 0 (DDP broadcasts rank 0's buffers).

    One thread, as each torchrun process has: a tiny BatchNorm net at batch 8 turns the
    summation order of another thread count into visible differences within three steps."""
    torch.set_num_threads(1)
    cfg = validate_config({**cfg, "gpus": 1})
    torch.manual_seed(cfg["seed"])
    data = prepare_data(cfg, torch.device("cpu"))
    torch.manual_seed(cfg["seed"])
    model = build_run_model(cfg, data)
    model.train()
    loss_fn = per_example_loss("ce", data.num_classes)
    params = [p for p in model.parameters() if p.requires_grad]
    base = torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg["momentum"],
                           weight_decay=cfg["weight_decay"])
    gen = torch.Generator().manual_seed(cfg["seed"] + 1)
    batches = DeviceBatches(data.x_train, data.y_train, batch_size=cfg["batch_size"],
                            drop_last=False, augment=cfg["augment"], generator=gen,
                            fill=model.mean.view(-1))
    rho = cfg["opt_hparams"]["rho"]
    losses, seen = 0.0, 0
    for _ in range(cfg["epochs"]):
        for x, y in batches.epoch():
            shards = list(zip(x.tensor_split(world), y.tensor_split(world), strict=True))
            replicas = [copy.deepcopy(model) for _ in shards]
            clean = []
            for replica, (xk, yk) in zip(replicas, shards, strict=True):
                loss = loss_fn(replica(xk), yk).mean()
                clean.append(torch.autograd.grad(loss, list(replica.parameters())))
                losses += float(loss.detach()) * len(yk)
                seen += len(yk)
            buffers = [b.clone() for b in replicas[0].buffers()]  # rank 0's statistics
            if rule == "global":
                mean = [sum(gs) / world for gs in zip(*clean, strict=True)]
                clean = [mean] * world
            perturbed = [torch.zeros_like(p) for p in params]
            for replica, grads, (xk, yk) in zip(replicas, clean, shards, strict=True):
                rp = list(replica.parameters())
                norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))
                with torch.no_grad():
                    for p, g in zip(rp, grads, strict=True):
                        p.add_(g * (rho / (norm + 1e-12)))
                with frozen_bn_stats(replica):
                    pgrads = torch.autograd.grad(loss_fn(replica(xk), yk).mean(), rp)
                for acc, g in zip(perturbed, pgrads, strict=True):
                    acc.add_(g / world)
            with torch.no_grad():
                for p, g in zip(params, perturbed, strict=True):
                    p.grad = g
                for b, value in zip(model.buffers(), buffers, strict=True):
                    b.copy_(value)
            base.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, losses / seen


def _close(got: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    assert got.keys() == expected.keys()
    for key in expected:
        assert torch.allclose(got[key].float(), expected[key].float(), atol=2e-6, rtol=1e-5), key


@pytest.fixture(autouse=True)
def _threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.mark.workflow  # torchrun: two processes
def test_ddp_step_equals_per_shard_sam_reference(tmp_path):
    run = tmp_path / "ddp"
    _torchrun(DDP_RUN, run)
    got = _state(run)
    expected, train_loss = _reference_sharded_sam(DDP_RUN, world=2)
    _close(got, expected)
    row = [r for r in read_jsonl(run / "metrics.jsonl") if r["kind"] == "epoch"][0]
    assert row["train_loss"] == pytest.approx(train_loss, rel=1e-5)  # averaged over ranks
    prov = read_json(run / "provenance.json")
    assert prov["distributed"]["world_size"] == 2
    assert prov["distributed"]["m_sharpness"] == 8 == prov["distributed"]["per_device_batch"]
    # the per-shard rule matters: the global perturbation ends elsewhere
    other, _ = _reference_sharded_sam(DDP_RUN, world=2, rule="global")
    gap = max(float((other[k].float() - got[k].float()).abs().max()) for k in got
              if got[k].is_floating_point())
    assert gap > 1e-4


@pytest.mark.workflow  # torchrun: two processes
def test_ddp_global_perturbation_equals_its_reference(tmp_path):
    """``ddp_perturbation: global`` (the LE-SAM code's DDP loop): one all-reduced gradient."""
    cfg = {**DDP_RUN, "ddp_perturbation": "global"}
    _torchrun(cfg, tmp_path / "ddp")
    expected, _ = _reference_sharded_sam(cfg, world=2, rule="global")
    _close(_state(tmp_path / "ddp"), expected)
    assert read_json(tmp_path / "ddp/provenance.json")["distributed"]["m_sharpness"] == 16


@pytest.mark.workflow  # torchrun: kills a rank
def test_ddp_killed_run_resumes_to_the_same_numbers(tmp_path):
    cfg = {**DDP_RUN, "epochs": 3, "optimizer": "lesam",
           "opt_hparams": {"sigma": 0.05, "rho_max": 0.1},
           "metrics_fn": "tests.train.ddp_helpers:kill_rank0_at_row"}
    ref, run = tmp_path / "ref", tmp_path / "run"
    _torchrun(cfg, ref)
    killed = _torchrun(cfg, run, env={"SHARPNESS_TEST_KILL_AT_ROW": "2"}, check=False)
    assert killed.returncode != 0
    assert (run / "checkpoint.pt").exists() and not (run / "final.json").exists()
    assert len(read_jsonl(run / "metrics.jsonl")) == 1  # epoch 1 written, epoch 2 killed
    assert read_json(run / "provenance.json")["status"] != "ok"
    _torchrun(cfg, run)
    assert read_json(run / "provenance.json")["resumed_from_step"] == 3
    assert (run / "metrics.jsonl").read_bytes() == (ref / "metrics.jsonl").read_bytes()
    assert read_json(run / "final.json") == read_json(ref / "final.json")
    a, b = _state(ref), _state(run)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_ddp_config_errors_name_the_key(monkeypatch, tmp_path):
    base = {k: v for k, v in DDP_RUN.items()}
    with pytest.raises(ConfigError, match="'optimizer'.*eigensam"):
        validate_config({**base, "optimizer": "eigensam", "opt_hparams": {}})
    with pytest.raises(ConfigError, match="'batch_size'"):
        validate_config({**base, "batch_size": 15})
    with pytest.raises(ConfigError, match="'gpus'.*fullbatch"):
        validate_config({**base, "mode": "fullbatch"})
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ConfigError, match="torchrun"):
        train(base, tmp_path / "run")
