"""GLMC in the paper profile: the reference code's settings per imbalance factor, each with its
source, and the second sampler's exponent (ynu-yangpeng/GLMC main.py: n_c^-q)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml

from sharpness.lesam import experiments as exp
from sharpness.lesam.glmc import GLMC_DEFAULTS, GLMCBatches

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def section() -> dict:
    return yaml.safe_load((ROOT / "workflow/config/paper.yaml").read_text())["lesam"]


@pytest.mark.parametrize(("factor", "contrast", "resample"), [(100, 4, 0.0), (50, 6, 0.2)])
def test_paper_glmc_runs_take_the_readme_settings_of_their_factor(section, factor, contrast,
                                                                   resample):
    runs = exp.glmc_runs(section)
    for label in ("sgd", "sam", "lesam"):
        cfg = runs[f"lt{factor}-{label}-s0"]["config"]
        assert cfg["glmc"] == {"beta": 0.5, "label_weighting": 1.2, "proj_dim": 128,
                               "lt_seed": 0, "contrast_weight": contrast,
                               "resample_weighting": resample, "imbalance_factor": factor}
        assert (cfg["batch_size"], cfg["lr"], cfg["weight_decay"]) == (64, 0.01, 0.005)
        for key in ("beta", "label_weighting", "contrast_weight", "resample_weighting"):
            assert cfg["sources"][f"glmc.{key}"].startswith("official: ynu-yangpeng/GLMC")
        assert f"IF {factor}" in cfg["sources"]["glmc.contrast_weight"]
    assert exp.missing_sources(section) == []


def test_a_glmc_setting_without_source_is_named(section):
    broken = yaml.safe_load(yaml.safe_dump(section))
    del broken["glmc"]["imbalance_factors"][1]["source"]["contrast_weight"]
    assert any("lt50-sgd: glmc.contrast_weight has no source" in p
               for p in exp.missing_sources(broken))


@pytest.mark.parametrize("q", [0.0, 0.2, 1.0])
def test_second_sampler_weights_are_count_to_the_minus_q(q):
    counts = [8, 4, 2, 1]
    y = torch.tensor([c for c, n in enumerate(counts) for _ in range(n)])
    run = SimpleNamespace(cfg={"seed": 0}, device=torch.device("cpu"),
                          data=SimpleNamespace(y_train=y, num_classes=4),
                          model=SimpleNamespace(mean=torch.zeros(1)))
    batches = GLMCBatches(run, {**GLMC_DEFAULTS, "resample_weighting": q}, counts)
    p = batches.sample_p / batches.sample_p.sum()
    per_class = torch.stack([p[y == c].sum() for c in range(4)])
    expected = torch.tensor(counts, dtype=torch.float64) ** (1 - q)
    torch.testing.assert_close(per_class, expected / expected.sum())
