"""The optimizers without torch's dynamo wrappers compute exactly what torch.optim computes.

``sharpness.optim.eager`` calls the functions ``torch.optim`` wraps in dynamo wrappers, so a
training job's first step does not import ``torch._dynamo``; these tests hold it to
bit-identical parameters, momentum buffers and state dicts, and check the import in a fresh
interpreter.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from sharpness.optim import build_optimizer
from sharpness.optim.eager import SGD, set_deterministic


def _model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))


def _batches(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(8, 5, generator=gen), torch.randint(0, 3, (8,), generator=gen))
            for _ in range(n)]


def _train(opt_cls: type[torch.optim.Optimizer], settings: dict, steps: int = 4
           ) -> tuple[nn.Module, torch.optim.Optimizer]:
    model = _model()
    opt = opt_cls(model.parameters(), **settings)
    for x, y in _batches(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model, opt


SETTINGS = [
    {"lr": 0.1},
    {"lr": 0.05, "momentum": 0.9, "weight_decay": 5e-4},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3, "foreach": False},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "foreach": True, "maximize": True},
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_eager_sgd_is_bit_identical_to_torch_sgd(settings: dict) -> None:
    ref_model, ref_opt = _train(torch.optim.SGD, settings)
    model, opt = _train(SGD, settings)
    for a, b in zip(ref_model.parameters(), model.parameters(), strict=True):
        assert torch.equal(a, b)
    ref_state, state = ref_opt.state_dict(), opt.state_dict()
    assert ref_state["param_groups"] == state["param_groups"]
    assert ref_state["state"].keys() == state["state"].keys()
    for k, v in ref_state["state"].items():
        if v.get("momentum_buffer") is None:
            assert state["state"][k].get("momentum_buffer") is None
        else:
            assert torch.equal(v["momentum_buffer"], state["state"][k]["momentum_buffer"])


def test_eager_sgd_resumes_from_a_torch_state_dict_and_keeps_hooks_and_grad_mode() -> None:
    settings = SETTINGS[1]
    _, ref_opt = _train(torch.optim.SGD, settings, steps=2)
    model = _model()
    opt = SGD(model.parameters(), **settings)
    opt.load_state_dict(ref_opt.state_dict())
    assert opt.state_dict()["param_groups"] == ref_opt.state_dict()["param_groups"]
    calls: list[str] = []
    opt.register_step_pre_hook(lambda *_: calls.append("pre"))
    opt.register_step_post_hook(lambda *_: calls.append("post"))
    nn.functional.cross_entropy(model(torch.ones(2, 5)), torch.tensor([0, 1])).backward()
    with torch.enable_grad():
        opt.step()
        assert torch.is_grad_enabled()
    assert calls == ["pre", "post"]
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in model.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("name,hparams", [("sgd", {}), ("sam", {"rho": 0.05}),
                                          ("lesam", {})])
def test_project_optimizers_match_a_torch_base_optimizer(name: str, hparams: dict) -> None:
    """``build_optimizer``'s base (eager SGD) against an explicit ``torch.optim.SGD`` base."""
    results = []
    for base in ("eager", "torch"):
        model = _model()
        given = None
        if base == "torch":
            given = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                                    weight_decay=5e-4)
        opt = build_optimizer(name, model, lr=0.05, momentum=0.9, weight_decay=5e-4,
                              total_steps=4, base_optimizer=given, **hparams)
        for x, y in _batches(4):
            opt.step(lambda x=x, y=y, model=model: _backward(model, x, y))
        results.append((model, opt))
    (m1, o1), (m2, o2) = results
    for a, b in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a, b)
    assert o1.diagnostics == o2.diagnostics


def _backward(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return loss


def test_set_deterministic_sets_the_same_flags_as_torch() -> None:
    prev = (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        set_deterministic(True, warn_only=True)
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        set_deterministic(False)
        assert not torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])


@pytest.mark.e2e  # a fresh interpreter
def test_a_training_step_does_not_import_torch_dynamo() -> None:
    """In a fresh interpreter: build, step, zero, save and load an optimizer; no dynamo."""
    probe = """
import sys, torch
from torch import nn
from sharpness.optim import build_optimizer
from sharpness.optim.eager import set_deterministic
set_deterministic(True, warn_only=True)
model = nn.Linear(3, 2)
opt = build_optimizer("sam", model, rho=0.05)
def closure():
    loss = model(torch.ones(4, 3)).pow(2).sum()
    loss.backward()
    return loss
opt.step(closure)
opt.zero_grad()
opt.load_state_dict(opt.state_dict())
assert "torch" in sys.modules
print(sorted(m for m in sys.modules if m.startswith(("torch._dynamo", "torch._inductor"))))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    assert out[-1] == "[]"
