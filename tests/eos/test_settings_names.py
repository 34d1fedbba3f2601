"""Ablation settings are named by value, so inserting a value touches no other setting."""

from __future__ import annotations

import copy

import pytest

from sharpness.eos.config import expand_settings, figure_sweeps
from sharpness.errors import ConfigError

EOS = {
    "defaults": {"dataset": "mnist_embedded", "loss": "mse", "device": "cpu"},
    "settings": {"base": {"model": "fcn", "model_kwargs": {"alpha": 0.3, "activation": "tanh"},
                          "lr_factors": [1.0]}},
    "ablations": {"base": "base", "lr_factors": [0.5, 2.0], "factors": {
        "init_scale": {"key": "model_kwargs.alpha", "values": [0.2, 0.4]},
        "activation": {"key": "model_kwargs.activation", "values": ["tanh", "relu"]},
        "param": {"key": "model_kwargs", "names": ["SP", "muP"],
                  "values": [{"model_kwargs.p": "sp"}, {"model_kwargs.p": "mup"}]},
    }},
}


def test_names_carry_the_value():
    names = set(expand_settings(EOS))
    assert {"abl_init_scale_0p2", "abl_init_scale_0p4", "abl_activation_tanh",
            "abl_activation_relu", "abl_param_sp", "abl_param_mup"} <= names


def test_inserting_a_value_changes_no_other_setting():
    before = expand_settings(EOS)
    eos = copy.deepcopy(EOS)
    eos["ablations"]["factors"]["init_scale"]["values"] = [0.1, 0.2, 0.4]
    eos["ablations"]["factors"]["activation"]["values"] = ["gelu", "tanh", "relu"]
    after = expand_settings(eos)
    assert set(after) - set(before) == {"abl_init_scale_0p1", "abl_activation_gelu"}
    for name, setting in before.items():  # same name, same settings: its job is not rerun
        assert after[name] == setting, name
    assert figure_sweeps(eos, "fig_ablations")[0].endswith("abl_init_scale_0p1/sweep.json")


def test_two_values_with_one_name_are_an_error():
    eos = copy.deepcopy(EOS)
    eos["ablations"]["factors"]["activation"]["values"] = ["re lu", "re_lu"]
    with pytest.raises(ConfigError, match="abl_activation_re"):
        expand_settings(eos)
