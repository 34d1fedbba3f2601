"""LE-SAM: first-order rise equals the budget, the clip holds, the schedule has its shape."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from sharpness.optim import BatchClosure, SigmaSchedule, build_optimizer


def test_sigma_schedule_shape():
    s = SigmaSchedule(0.5, total_steps=100, warmup_frac=0.1, anneal_frac=0.3)
    values = [s.value(t) for t in range(100)]
    # linear warm-up over 10 steps, first step already positive
    assert values[0] == pytest.approx(0.05)
    assert values[:10] == pytest.approx([0.05 * (t + 1) for t in range(10)])
    # constant plateau
    assert all(v == 0.5 for v in values[10:70])
    # cosine anneal: strictly decreasing, halfway at the middle, exactly 0 at the last step
    anneal = values[70:]
    assert all(a > b for a, b in zip(anneal, anneal[1:], strict=False))
    assert values[70 + 14] == pytest.approx(0.5 * 0.5 * (1 + math.cos(math.pi * 15 / 30)))
    assert values[99] == pytest.approx(0.0, abs=1e-15)
    assert s.value(100) == 0.0 and s.value(10_000) == 0.0
    # no warm-up / no anneal: constant
    flat = SigmaSchedule(0.2, total_steps=10, warmup_frac=0.0, anneal_frac=0.0)
    assert [flat.value(t) for t in range(10)] == [0.2] * 10
    # stateful counter and its checkpoint
    s.step()
    s.step()
    assert s.current() == pytest.approx(0.15)
    other = SigmaSchedule(0.5, total_steps=100, warmup_frac=0.1, anneal_frac=0.3)
    other.load_state_dict(s.state_dict())
    assert other.current() == s.current()
    with pytest.raises(ValueError):
        SigmaSchedule(0.5, total_steps=10, warmup_frac=0.6, anneal_frac=0.6)


def _run_lesam(sigma: float, rho_max: float | None, steps: int = 12):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    x, y = torch.randn(32, 6), torch.randint(0, 4, (32,))
    opt = build_optimizer(
        "lesam",
        model,
        lr=0.05,
        total_steps=steps,
        sigma=sigma,
        rho_max=rho_max,
        schedule="fractions",
        warmup_frac=0.25,
        anneal_frac=0.25,
    )
    logs = []
    for _ in range(steps):
        opt.step(BatchClosure(model, x, y))
        logs.append(dict(opt.diagnostics))
    return logs


def test_first_order_rise_equals_sigma_when_clip_inactive():
    logs = _run_lesam(sigma=0.01, rho_max=None)
    sigmas = [d["sigma"] for d in logs]
    assert sigmas[0] < sigmas[4] and sigmas[-1] == pytest.approx(0.0, abs=1e-12)  # schedule used
    for d in logs:
        assert d["clipped"] == 0.0
        assert d["g_dot_eps"] == pytest.approx(d["sigma"], rel=1e-5, abs=1e-9)
        assert d["radius"] == pytest.approx(d["sigma"] / d["grad_norm"], rel=1e-5, abs=1e-9)


def test_clip_holds_otherwise():
    rho_max = 0.05
    logs = _run_lesam(sigma=1.0, rho_max=rho_max)
    clipped = [d for d in logs if d["clipped"] == 1.0]
    free = [d for d in logs if d["clipped"] == 0.0]
    assert clipped and free  # both regimes occur (the last, annealed steps are unclipped)
    for d in clipped:
        assert d["radius"] == pytest.approx(rho_max, rel=1e-5)
        assert d["sigma"] / d["grad_norm"] > rho_max
        assert d["g_dot_eps"] == pytest.approx(rho_max * d["grad_norm"], rel=1e-5)
        assert d["g_dot_eps"] < d["sigma"]
    for d in free:
        assert d["radius"] <= rho_max * (1 + 1e-6)
        assert d["g_dot_eps"] == pytest.approx(d["sigma"], rel=1e-5, abs=1e-9)


def test_lesam_needs_total_steps():
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="total_steps"):
        build_optimizer("lesam", model, total_steps=None)  # type: ignore[arg-type]
