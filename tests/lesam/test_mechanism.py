"""The catalog's lesam checks on tiny runs: every optimizer learns; LE-SAM's logged
first-order rise is sigma_t; SAM's first-order term dominates its curvature term early while
LE-SAM's stays at sigma_t.

The Lanczos-vs-dense check (rel. error < 1e-4 on a tiny model) lives with the curvature
library: tests/curvature/test_curvature.py::test_lanczos_top5_matches_dense.
"""

from __future__ import annotations

import pytest
import torch

from sharpness.io import read_jsonl
from sharpness.lesam.signal import run_signal
from sharpness.optim import OPTIMIZERS
from sharpness.optim.spec import optimizer_specs
from sharpness.train import train

#: trains a tiny CNN with every optimizer: second tier (run it by name after changing one)
pytestmark = pytest.mark.e2e

torch.set_num_threads(1)

TINY = {"dataset": "mnist_embedded", "model": "cnn", "model_kwargs": {"channels": 16},
        "train_size": 768, "test_size": 300, "epochs": 1, "batch_size": 32, "lr": 0.05,
        "device": "cpu", "checkpoint_every": 0}
# Each optimizer's tiny-run settings are its optimizers.yaml entry's tiny_hparams: radii scaled to this
# 16-channel CNN (rho 0.05 stalls SAM on it: 11% after 24 steps). ESAM with its official data
# selection (gamma 0.5: the ~15 examples of 32 whose loss rises most) stays at chance in these
# 24 steps (0.07 measured), so it runs its weight perturbation alone here (gamma 1); SDS is
# checked against its rule in tests/optim/test_official_recipes.py. LE-SAM: no warm-up (the
# official one spans 10 epochs from sigma 0).
HPARAMS = {name: dict(spec.tiny_hparams) for name, spec in optimizer_specs().items()}


def test_hparams_cover_every_optimizer():
    assert set(HPARAMS) == set(OPTIMIZERS)


@pytest.mark.parametrize("name", sorted(HPARAMS))
def test_every_optimizer_trains_above_chance(name, tmp_path):
    final = train({**TINY, "optimizer": name, "opt_hparams": HPARAMS[name]}, tmp_path)
    assert final["status"] == "ok"
    # chance is 0.1 (300 test images: sd 0.017); measured: 0.67-0.74
    assert final["final_test_acc"] > 0.18, final


def test_logged_first_order_rise_equals_sigma(tmp_path):
    cfg = {**TINY, "optimizer": "lesam", "log_every": 1,
           "opt_hparams": {"sigma": 0.05, "rho_max": 10.0, "schedule": "fractions"}}
    train(cfg, tmp_path)
    steps = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if r["kind"] == "step"]
    assert len(steps) == 24
    sigmas = [r["opt_sigma"] for r in steps]
    assert sigmas[0] < sigmas[3]  # linear warm-up ...
    assert sigmas[-1] < max(sigmas)  # ... and cosine anneal at the end
    for r in steps:
        assert r["opt_clipped"] == 0.0
        assert r["opt_g_dot_eps"] == pytest.approx(r["opt_sigma"], rel=1e-5, abs=1e-9)


@pytest.fixture(scope="module")
def signal_rows(tmp_path_factory):
    base = {**TINY, "train_size": 512, "augment": {"crop": 0, "flip": False, "cutout": 0}}
    rows = {}
    for name, hp in (("sam", {"rho": 0.05}),
                     ("lesam", {"sigma": 0.05, "rho_max": 10.0, "schedule": "fractions"})):
        out = tmp_path_factory.mktemp(name)
        rows[name] = run_signal({**base, "optimizer": name, "opt_hparams": hp}, out,
                                probe_every=2)
        assert read_jsonl(out / "signal.jsonl") == rows[name]
    return rows


def test_sam_first_order_term_dominates_curvature_early(signal_rows):
    early = signal_rows["sam"][:3]
    assert len(early) == 3, "the SAM probe recorded too few rows"
    for r in early:
        assert r["g_dot_eps"] == pytest.approx(0.05 * r["grad_norm"], rel=1e-5)
        assert r["g_dot_eps"] > 5 * abs(r["curvature"]), r


def test_lesam_first_order_term_stays_at_sigma(signal_rows):
    rows = signal_rows["lesam"]
    assert len(rows) >= 3, "the LE-SAM probe recorded too few rows"
    for r in rows:
        assert r["clipped"] == 0.0
        assert r["g_dot_eps"] == pytest.approx(r["sigma"], rel=1e-5, abs=1e-9)
    # the measured rise is first order + curvature up to a third-order remainder
    checked = [r for r in rows if r["sigma"] > 0.01]
    assert checked, "no probe with sigma above 0.01: the remainder check would test nothing"
    for r in checked:
        if r["sigma"] > 0.01:
            assert abs(r["rise"] - (r["g_dot_eps"] + r["curvature"])) < 0.5 * abs(r["rise"])
