"""The planner's passes per step against passes counted on the CPU, method by method, and
prices that name their basis (the rate per precision, a GPU's measurement)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from sharpness import cost
from sharpness.optim.spec import optimizer_specs

price_mod = importlib.import_module("sharpness.cost.price")

STEPS = 3
BATCH = 16


@pytest.fixture(scope="module")
def paper_jobs(repo) -> list[cost.Job]:
    from sharpness.config.profiles import load_profile

    return cost.plan_jobs(load_profile([str(repo / "workflow/config/paper.yaml")], None))


class _Net(nn.Module):
    """A tiny classifier with a final ``fc`` (what GLMC's backbone needs)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU())
        self.fc = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.body(x))


def _count(model: nn.Module, watched: nn.Module, run_steps) -> tuple[float, float]:
    """(forward passes, backward passes) per step, a forward counted in full batches."""
    seen = {"examples": 0, "backward": 0}
    watched.register_forward_hook(
        lambda m, i, o: seen.update(examples=seen["examples"] + i[0].shape[0]))
    first = next(p for p in model.parameters())
    first.register_hook(lambda g: seen.update(backward=seen["backward"] + 1))
    run_steps()
    return seen["examples"] / BATCH / STEPS, seen["backward"] / STEPS


def _optimizer_counts(name: str, hparams: dict) -> tuple[float, float]:
    from sharpness.optim import BatchClosure, build_optimizer

    torch.manual_seed(0)
    model = _Net()
    opt = build_optimizer(name, model, lr=0.01, total_steps=STEPS, **hparams)
    x, y = torch.randn(BATCH, 12), torch.randint(0, 3, (BATCH,))

    def steps() -> None:
        for _ in range(STEPS):
            opt.step(BatchClosure(model, x, y))
    return _count(model, model.body, steps)


#: optimizers whose step is exactly its declared passes, forward and backward: every one but
#: ESAM (its selection forwards a subset again) and those with Hessian-vector products
EXACT = sorted(n for n, s in optimizer_specs().items() if n != "esam" and s.hvp_every is None)


@pytest.mark.parametrize("name", EXACT)
def test_planner_passes_equal_counted_passes(name):
    forward, backward = _optimizer_counts(name, {})
    assert forward == backward == cost.passes_per_step(name, {})


def test_esam_and_eigensam_passes_counted():
    """ESAM back-propagates twice per step (its selection adds forward work on a subset);
    Eigen-SAM's power iterations are priced at 2 passes per Hessian-vector product, at least
    what they do (one gradient per product)."""
    forward, backward = _optimizer_counts("esam", {})
    assert backward == cost.passes_per_step("esam", {})
    assert forward <= 1.5 * cost.passes_per_step("esam", {})
    hp = {"eig_every": 1, "power_iters": 2}
    forward, backward = _optimizer_counts("eigensam", hp)
    assert max(forward, backward) <= cost.passes_per_step("eigensam", hp)
    assert backward > cost.passes_per_step("sam", {})  # the iterations are not free


def test_glmc_makes_two_passes_per_closure_and_is_priced_so(repo):
    """GLMC's loss runs the network on its MixUp and its CutMix batch: two passes per call
    of the closure, so GLMC+SAM makes four per step; the long-tail jobs carry the factor."""
    from sharpness.config.profiles import load_profile
    from sharpness.lesam.glmc import GLMCBatch, GLMCMethod, GLMCNet

    torch.manual_seed(0)
    backbone = _Net()
    net = GLMCNet(backbone, 3, 4)
    run = SimpleNamespace(model=SimpleNamespace(net=net, mean=torch.zeros(1), std=torch.ones(1)),
                          epoch=0, cfg={"epochs": 10})
    eye = torch.eye(3)[torch.randint(0, 3, (BATCH,))]
    batch = GLMCBatch(torch.randn(BATCH, 12), torch.randn(BATCH, 12), eye, eye)
    method = GLMCMethod({"contrast_weight": 1.0})

    def steps() -> None:
        for _ in range(STEPS):
            method.closure(run, batch, eye.argmax(1))()
    forward, backward = _count(backbone, backbone.body, steps)
    assert forward == cost.METHOD_PASSES["glmc"] == 2.0
    assert backward == 1.0  # one backward through the sum of both passes' losses
    config = load_profile([str(repo / "workflow/config/paper.yaml")], None)
    jobs = [j for j in cost.lesam_jobs(config["lesam"]) if j.run.startswith("glmc/")]
    assert jobs
    for job in jobs:
        opt = "sam" if "-sam-" in job.run else "lesam" if "-lesam-" in job.run else "sgd"
        assert job.passes == 2.0 * cost.passes_per_step(opt, {})


def test_rates_per_precision_and_the_basis_of_each_price(paper_jobs, monkeypatch):
    assert cost.parse_tflops("fp32=10,bf16=30") == {"fp32": 10.0, "bf16": 30.0}
    assert cost.parse_tflops("40") == {"fp32": 20.0, "bf16": 40.0}
    assert cost.parse_tflops("bf16=60") == {"fp32": 20.0, "bf16": 60.0}
    for bad in ("fp16=3", "fp32=0", "fast"):
        with pytest.raises(ValueError):
            cost.parse_tflops(bad)
    jobs = [j for j in paper_jobs if j.run.startswith("cifar10_resnet18-sam-s0")]
    slow = cost.price(jobs, method="analytic", rates={"fp32": 10.0, "bf16": 40.0})
    fast = cost.price(jobs, method="analytic", rates={"fp32": 20.0, "bf16": 40.0})
    assert slow[0].basis == "analytic fp32 at 10 TFLOP/s"
    assert slow[0].gpu_hours == pytest.approx(2 * fast[0].gpu_hours)
    entry = {"gpu": "Test GPU", "commit": "abc1234", "code": price_mod.training_code(),
             "model": jobs[0].model,
             "dataset": jobs[0].dataset, "width": jobs[0].width, "batch": jobs[0].shape_key[-1],
             "precision": "fp32", "step_seconds": 0.5}
    monkeypatch.setattr(price_mod, "measured_throughputs", lambda path=None: (entry,))
    measured = cost.price(jobs, method="analytic")
    assert measured[0].basis == "measured fp32 on Test GPU at abc1234"
    want = 0.5 * (jobs[0].steps * jobs[0].passes + jobs[0].eval_examples / jobs[0].batch / 3)
    assert measured[0].gpu_hours == pytest.approx(want / 3600)
