"""A setting's gradient flow is reused only for the same settings and code.

Before the cache key, `run_flow` returned any `flow.json` already in the folder: a setting
with another model in the same output folder got the first setting's eta_c.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from sharpness.eos.setting import resolve_setting
from sharpness.eos.sweep import run_flow

DATA = str(Path(__file__).resolve().parents[2] / "data")
BASE = {
    "label": "tiny", "dataset": "mnist_embedded", "train_size": 32, "test_size": 50,
    "model": "fcn", "model_kwargs": {"hidden": 8, "activation": "tanh", "alpha": 0.3},
    "loss": "mse", "loss_goal": 0.3, "device": "cpu", "lr_factors": [1.0],
}


def test_changed_setting_in_the_same_folder_gives_a_new_flow(tmp_path, caplog):
    torch.set_num_threads(1)
    a = resolve_setting(BASE)
    b = resolve_setting({**BASE, "model_kwargs": {**BASE["model_kwargs"], "hidden": 12}})
    first = run_flow(a, tmp_path / "flow", DATA)
    with caplog.at_level(logging.WARNING):
        second = run_flow(b, tmp_path / "flow", DATA)
    fresh = run_flow(b, tmp_path / "fresh", DATA)
    assert second["eta_c"] != pytest.approx(first["eta_c"], rel=1e-6)
    assert second["eta_c"] == pytest.approx(fresh["eta_c"], rel=1e-12)
    assert "model_kwargs.hidden: 8 -> 12" in caplog.text


def test_same_flow_settings_reuse_the_flow(tmp_path):
    torch.set_num_threads(1)
    a = resolve_setting(BASE)
    first = run_flow(a, tmp_path, DATA)
    mtime = (tmp_path / "flow.json").stat().st_mtime_ns
    # the sweep's grid and labels are not read by the flow: still the same flow
    again = run_flow(resolve_setting({**BASE, "lr_factors": [0.5, 2.0], "label": "x"}),
                     tmp_path, DATA)
    assert again == first and (tmp_path / "flow.json").stat().st_mtime_ns == mtime
