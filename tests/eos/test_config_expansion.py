"""`eos.config`: settings merged with the defaults, ablations expanded over their values (each
with the ablation's lr_factors), dropped settings checked, and bad input named by its key."""

from __future__ import annotations

import copy

import pytest

from sharpness.eos.config import (
    ablation_settings,
    dropped_settings,
    expand_settings,
    figure_sweeps,
    figure_targets,
    main_settings,
    one_job_ablations,
)
from sharpness.errors import ConfigError

EOS = {
    "defaults": {"dataset": "mnist_embedded", "loss": "mse", "flow": {"rtol": 1e-3},
                 "lr_factors": [0.5, 1.0, 2.0]},
    "settings": {
        "fcn": {"model": "fcn", "model_kwargs": {"hidden": 32, "alpha": 0.3},
                "flow": {"method": "cvode"}},
        "cnn": {"label": "the CNN", "model": "cnn", "lr_factors": [4.0]},
        "vit": {"model": "vit_small"},
    },
    "figures": {"fig_phase": ["fcn", "cnn"], "fig_measures": ["fcn"]},
    "dropped": {"vit": "too slow"},
    "ablations": {"base": "fcn", "lr_factors": [0.25, 8.0], "factors": {
        "width": {"label": "hidden width", "key": "model_kwargs.hidden", "values": [16, 64]},
        "loss": {"key": "loss", "values": ["ce"]},
    }},
}


def test_defaults_merge_under_each_setting_nested_dicts_too():
    mains = main_settings(EOS)
    assert list(mains) == ["fcn", "cnn", "vit"]
    assert mains["fcn"]["flow"] == {"rtol": 1e-3, "method": "cvode"}
    assert mains["fcn"]["lr_factors"] == [0.5, 1.0, 2.0] and mains["cnn"]["lr_factors"] == [4.0]
    assert mains["fcn"]["label"] == "fcn" and mains["cnn"]["label"] == "the CNN"
    mains["fcn"]["flow"]["rtol"] = 1.0  # a copy: the config is not changed
    assert EOS["defaults"]["flow"]["rtol"] == 1e-3


def test_every_ablation_value_is_the_base_with_one_key_changed_and_the_ablation_grid():
    abl = ablation_settings(EOS)
    assert sorted(abl) == ["abl_loss_ce", "abl_width_16", "abl_width_64"]
    base = main_settings(EOS)["fcn"]
    for name, setting in abl.items():
        assert setting["lr_factors"] == [0.25, 8.0] and setting["lrs"] == [], name
        changed = {k for k in setting if setting[k] != base.get(k)}
        assert changed - {"lr_factors", "lrs", "label", "ablation"} in ({"model_kwargs"},
                                                                       {"loss"}), name
    assert abl["abl_width_64"]["model_kwargs"] == {"hidden": 64, "alpha": 0.3}
    assert abl["abl_width_64"]["label"] == "hidden width = 64"
    assert abl["abl_width_64"]["ablation"] == {"factor": "width", "label": "hidden width",
                                               "value": "64"}
    assert abl["abl_loss_ce"]["loss"] == "ce"
    # settings x lr_factors: the grid of runs the sweeps will make
    expanded = expand_settings(EOS)
    runs = {name: len(s["lr_factors"]) for name, s in expanded.items()}
    assert runs == {"fcn": 3, "cnn": 1, "vit": 3, "abl_width_16": 2, "abl_width_64": 2,
                    "abl_loss_ce": 2}


def test_without_ablation_lr_factors_the_base_grid_is_used():
    eos = copy.deepcopy(EOS)
    del eos["ablations"]["lr_factors"]
    assert ablation_settings(eos)["abl_width_16"]["lr_factors"] == [0.5, 1.0, 2.0]


def test_dropped_settings_are_expanded_but_drawn_by_no_figure():
    assert dropped_settings(EOS) == {"vit": "too slow"}
    assert "vit" in expand_settings(EOS)
    drawn = {p for fig in ("fig_phase", "fig_measures") for p in figure_sweeps(EOS, fig)}
    assert not any("/vit/" in p for p in drawn)
    assert figure_targets(EOS) == ["figures/eos/fig_phase.pdf", "figures/eos/fig_measures.pdf",
                                   "figures/eos/fig_ablations.pdf"]


@pytest.mark.parametrize(("edit", "key"), [
    (lambda e: e["dropped"].update(swin="?"), "eos.dropped.swin"),
    (lambda e: e["figures"]["fig_phase"].append("vit"), "eos.dropped.vit"),
])
def test_bad_dropped_settings_name_the_key(edit, key):
    eos = copy.deepcopy(EOS)
    edit(eos)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        dropped_settings(eos)


@pytest.mark.parametrize(("edit", "key"), [
    (lambda a: a.update(base="resnet"), "eos.ablations.base"),
    (lambda a: a["factors"]["width"].pop("values"), "eos.ablations.factors.width.values"),
    (lambda a: a["factors"]["width"].pop("key"), "eos.ablations.factors.width.key"),
    (lambda a: a["factors"]["width"].update(names=["a"]), "eos.ablations.factors.width.names"),
    (lambda a: a["factors"]["width"].update(key="model.hidden"), "eos ablation key 'model.hidden'"),
    (lambda a: a["factors"]["loss"].update(values=["ce", "CE"]), "abl_loss_ce"),
])
def test_bad_ablations_name_the_key(edit, key):
    eos = copy.deepcopy(EOS)  # (the base's 'model' is a string, so 'model.hidden' cannot reach in)
    edit(eos["ablations"])
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        expand_settings(eos)


def test_an_ablation_name_taken_by_a_main_setting_is_an_error():
    eos = copy.deepcopy(EOS)
    eos["settings"]["abl_loss_ce"] = {"model": "fcn"}
    with pytest.raises(ConfigError, match="abl_loss_ce"):
        expand_settings(eos)


def test_ablation_max_steps_overrides_the_base_cap_of_every_variant():
    eos = copy.deepcopy(EOS)
    base_cap = ablation_settings(eos)["abl_width_16"].get("max_steps")
    eos["ablations"]["max_steps"] = 4321
    variants = ablation_settings(eos)
    assert base_cap != 4321
    assert {v["max_steps"] for v in variants.values()} == {4321}


def test_one_job_names_the_ablation_variants_only_when_asked():
    assert one_job_ablations(EOS) == []
    eos = copy.deepcopy(EOS)
    eos["ablations"]["one_job"] = True
    assert one_job_ablations(eos) == list(ablation_settings(eos)) == [
        "abl_width_16", "abl_width_64", "abl_loss_ce"]
    assert one_job_ablations({"settings": EOS["settings"]}) == []
