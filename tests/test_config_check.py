"""sharpness.config.check: the checks the Snakefile runs while the workflow plans, each naming
the key; and the schema kept equal to the code it describes (training settings, eos settings,
optimizer names, defaults)."""

from __future__ import annotations

import copy
import math

import pytest
import yaml

from sharpness.config.check import load_schema
from sharpness.errors import ConfigError
from sharpness.jobs import check_workflow_config
from tests.conftest import REPO

SCHEMA = load_schema(REPO / "workflow/config/config.schema.yaml")
QUICK = yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())
PAPER = yaml.safe_load((REPO / "workflow/config/paper.yaml").read_text())


def _set(config, dotted, value):
    node = config
    *parents, last = dotted.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return config


@pytest.mark.parametrize("config", [QUICK, PAPER], ids=["quick", "paper"])
def test_shipped_profiles_pass(config):
    check_workflow_config(copy.deepcopy(config), SCHEMA)


@pytest.mark.parametrize(("key", "value", "message"), [
    # NaN and infinities, anywhere
    ("minorfirst.l1_maxmargin.h", math.nan,
     "config key minorfirst.l1_maxmargin.h: nan is not a finite number"),
    ("lesam.base.lr", math.inf, "config key lesam.base.lr: inf is not a finite number"),
    ("eos.toy.lrs.0", -math.inf, "config key eos.toy.lrs[0]: -inf is not a finite number"),
    ("bridges.lesam_diagonal.rho", math.nan,
     "config key bridges.lesam_diagonal.rho: nan is not a finite number"),
    # seeds non-negative in every section
    ("eos.defaults.seed", -3, "config key eos.defaults.seed: -3 is less than the minimum of 0"),
    ("eos.settings.mnist_fcn_mse.seed", -1,
     "config key eos.settings.mnist_fcn_mse.seed: -1 is less than the minimum of 0"),
    ("bridges.sam_eos.setting.seed", -1,
     "config key bridges.sam_eos.setting.seed: -1 is less than the minimum of 0"),
    ("lesam.groups.cifar10_wrn.seeds", [-5],
     "config key lesam.groups.cifar10_wrn.seeds[0]: -5 is less than the minimum of 0"),
    ("lesam.glmc.seeds", [-1], "config key lesam.glmc.seeds[0]: -1 is less than the minimum of 0"),
    ("lesam.signal.seed", -1, "config key lesam.signal.seed: -1 is less than the minimum of 0"),
    ("gradcam.seeds", [-2], "config key gradcam.seeds[0]: -2 is less than the minimum of 0"),
    ("minorfirst.l1_maxmargin.multi.seed", -4,
     "config key minorfirst.l1_maxmargin.multi.seed: -4 is less than the minimum of 0"),
    # what a group sets is refused in its overrides (never replaced silently)
    ("lesam.groups.cifar10_wrn.overrides.seed", 5,
     "config key lesam.groups.cifar10_wrn.overrides.seed: set per run by the group's `seeds`"),
    ("lesam.groups.cifar10_wrn.overrides.optimizer", "sam",
     "config key lesam.groups.cifar10_wrn.overrides.optimizer: set per run by the group's "
     "`optimizers` entries"),
    ("lesam.glmc.overrides.opt_hparams", {"rho": 0.1},
     "config key lesam.glmc.overrides.opt_hparams: set per run by lesam.optimizers"),
    # unknown override keys and optimizer names
    ("lesam.groups.cifar10_wrn.overrides.optimizer", "sgdd",
     "config key lesam.groups.cifar10_wrn.overrides.optimizer: 'sgdd' is not one of"),
    ("lesam.groups.cifar10_wrn.overrides.lrr", 0.1,
     "config key lesam.groups.cifar10_wrn.overrides: Unevaluated properties are not allowed "
     "('lrr' was unexpected)"),
    ("lesam.groups.cifar10_wrn.optimizers", ["sgdd"],
     "config key lesam.groups.cifar10_wrn.optimizers[0]: 'sgdd' is not in lesam.optimizers"),
    ("lesam.groups.ablation.optimizers.0.optimizer", "sgdd",
     "config key lesam.groups.ablation.optimizers[0].optimizer: 'sgdd' is not one of"),
    ("lesam.signal.optimizers", ["sam", "lesamm"],
     "config key lesam.signal.optimizers[1]: 'lesamm' is not in lesam.optimizers"),
    ("lesam.optimizers.sgdd", {}, "config key lesam.optimizers: 'sgdd' is not one of"),
    ("gradcam.optimizers.sgd.name", "sgdd", "config key gradcam.optimizers.sgd.name: 'sgdd'"),
    ("minorfirst.cnn_synthetic.optimizers.sgdd", {},
     "config key minorfirst.cnn_synthetic.optimizers: 'sgdd' is not one of"),
    # eos settings as the sweep sees them, checked while planning (not when the job starts)
    ("eos.settings.mnist_fcn_mse.flow.method", "rk4",
     "config key eos.settings.mnist_fcn_mse.flow.method: 'rk4' is not one of"),
    ("eos.settings.mnist_fcn_mse.lossgoal", 0.1,
     "config key eos.settings.mnist_fcn_mse: Additional properties are not allowed "
     "('lossgoal' was unexpected)"),
    ("eos.ablations.factors.data_size.values", [64, -2],
     "config key eos.ablations.factors.data_size: setting 'abl_data_size_m2' (with "
     "eos.defaults) has train_size: -2 is less than the minimum of 1"),
    ("eos.figures.fig_phase", ["mnist_fcn_mse", "nope"],
     "config key eos.figures.fig_phase[1]: 'nope' is not a setting"),
    # typos in any section
    ("minorfirst.l1_maxmargin.hh", 1,
     "config key minorfirst.l1_maxmargin: Additional properties are not allowed ('hh' was "
     "unexpected)"),
    # hyper-parameters through the optimizer's own check, at planning
    ("lesam.optimizers.sam.rho", -1.0, "config key lesam.optimizers.sam (lesam run "
     "cifar10_resnet18-sam-s0): optimizer 'sam': rho must be in [0, inf), got -1.0"),
    ("lesam.groups.ablation.optimizers.0.hparams", {"sigma": 0.02, "schedule": "daily"},
     "config key lesam.optimizers.lesam with the hparams of entry 'sigma_0.02' (lesam run "
     "ablation-sigma_0.02-s0): optimizer 'lesam': schedule must be one of"),
    ("lesam.groups.transfer_finetune.init_from", ["transfer_pretrain", "sam"],
     "config key lesam.groups.transfer_finetune.init_from: no label 'sam' in group "
     "'transfer_pretrain'"),
    # a model and its options, as every run and setting will build it, at planning
    ("lesam.base.model", "resnet81", "config key lesam.base.model: unknown model 'resnet81'; "
     "known: cnn, fcn, pyramidnet110, resnet101, resnet18, resnet50, vit_b_16, vit_small, "
     "wrn28_10 (lesam run cifar10_resnet18-sgd-s0)"),
    ("lesam.groups.cifar10_wrn.overrides.model_kwargs", {"depthh": 10},
     "config key lesam.groups.cifar10_wrn.overrides.model_kwargs: model 'wrn28_10' has no "
     "option(s) depthh; accepted: depth, dropout, widen (lesam run cifar10_wrn-sgd-s0)"),
    ("lesam.glmc.overrides.model", "vit", "config key lesam.glmc.overrides.model: unknown "
     "model 'vit'"),
    ("eos.settings.mnist_fcn_mse.model", "fnc", "config key eos.settings.mnist_fcn_mse.model: "
     "setting 'mnist_fcn_mse' (with eos.defaults): unknown model 'fnc'"),
    ("eos.settings.cifar_cnn_ce.model_kwargs", {"chanels": 8},
     "config key eos.settings.cifar_cnn_ce.model_kwargs: setting 'cifar_cnn_ce' (with "
     "eos.defaults): model 'cnn' has no option(s) chanels; accepted: activation, alpha, bias, "
     "channels, depth, head, pool"),
    ("eos.ablations.factors.depth.key", "model_kwargs.layers",
     "config key eos.ablations.factors.depth.model_kwargs: setting 'abl_depth_1' (with "
     "eos.defaults): model 'fcn' has no option(s) layers"),
    ("bridges.sam_eos.setting.model_kwargs", {"widht": 2},
     "config key bridges.sam_eos.setting.model_kwargs: model 'fcn' has no option(s) widht"),
    # every lesam run as the engine will validate it: what only a whole run can get wrong
    ("lesam.base.loss_goal", 0.1, "config key lesam.base or lesam.groups.cifar10_resnet18."
     "overrides (lesam run cifar10_resnet18-sgd-s0): train config key 'loss_goal': only "
     "applies to mode 'fullbatch'"),
    ("lesam.groups.cifar10_wrn.overrides.gpus", 3, "config key lesam.base or "
     "lesam.groups.cifar10_wrn.overrides (lesam run cifar10_wrn-sgd-s0): train config key "
     "'batch_size': 128 is not divisible by gpus=3"),
    ("lesam.glmc.overrides.classes", [1, 1], "config key lesam.base or lesam.glmc.overrides "
     "(lesam glmc run lt100-sgd-s0): train config key 'classes': must be a non-empty list of "
     "distinct ints"),
])
def test_bad_input_is_refused_naming_the_key(key, value, message):
    config = _set(copy.deepcopy(QUICK), key, value)
    with pytest.raises(ConfigError) as info:
        check_workflow_config(config, SCHEMA)
    assert message in str(info.value)


def test_eos_setting_needs_learning_rates():
    config = copy.deepcopy(QUICK)
    del config["eos"]["defaults"]["lr_factors"]
    config["eos"]["settings"]["mnist_fcn_mse"]["lrs"] = [0.1]
    config["eos"]["settings"]["mnist_fcn_ce"].pop("lr_factors", None)  # the quick profile sets them
    with pytest.raises(ConfigError, match=r"config key eos.settings.mnist_fcn_ce: needs lrs"):
        check_workflow_config(config, SCHEMA)


def test_paper_profile_needs_sources():
    config = copy.deepcopy(PAPER)
    del config["lesam"]["optimizers"]["esam"]["source"]["beta"]
    with pytest.raises(ConfigError, match="esam: opt_hparams.beta has no source"):
        check_workflow_config(config, SCHEMA)


def _properties(ref):
    return SCHEMA["$defs"][ref]["properties"]


def _same_keys(schema_keys, code_keys, where):
    """Name the keys to add to (or remove from) the schema, with a description each."""
    missing, extra = sorted(set(code_keys) - set(schema_keys)), sorted(set(schema_keys) - set(code_keys))
    assert not missing and not extra, (f"config.schema.yaml {where}: add {missing} (with a "
                                       f"description and default), remove {extra}")


def test_training_settings_match_the_engine():
    """`$defs/train` has exactly the keys of sharpness.train.config.DEFAULTS, with their
    defaults, so overrides and gradcam.train are checked against what the engine reads."""
    from sharpness.train.config import DEFAULTS

    props = _properties("train")
    _same_keys(props, DEFAULTS, "$defs/train")
    for key, value in DEFAULTS.items():
        if "default" in props[key]:
            assert props[key]["default"] == value, key


def test_eos_settings_match_the_sweep():
    from sharpness.eos.setting import FLOW_DEFAULTS, MEASURE_DEFAULTS, SETTING_DEFAULTS

    props = _properties("eos_setting")
    internal = {"ablation"}  # set by sharpness.eos.config for ablation variants
    _same_keys(props, set(SETTING_DEFAULTS) - internal, "$defs/eos_setting")
    for part, defaults in (("flow", FLOW_DEFAULTS), ("measures", MEASURE_DEFAULTS)):
        _same_keys(props[part]["properties"], defaults, f"$defs/eos_setting.{part}")
        for key, value in defaults.items():
            assert props[part]["properties"][key]["default"] == value, (part, key)
    for key, value in SETTING_DEFAULTS.items():
        if key not in internal:
            assert props[key]["default"] == value, key


def test_optimizer_names_match_the_registry():
    from sharpness.optim import OPTIMIZERS

    assert sorted(SCHEMA["$defs"]["optimizer"]["enum"]) == sorted(OPTIMIZERS)


def test_glmc_method_matches_its_defaults():
    from sharpness.lesam.glmc import GLMC_DEFAULTS

    props = SCHEMA["properties"]["lesam"]["properties"]["glmc"]["properties"]["method"]
    method = {k: v for k, v in GLMC_DEFAULTS.items() if k != "imbalance_factor"}
    _same_keys(props["properties"], method, "lesam.glmc.method")
    assert {k: p["default"] for k, p in props["properties"].items()} == method


def test_train_cli_refuses_negative_seed_and_nan():
    from sharpness.train.config import validate_config

    base = {"dataset": "mnist_embedded", "model": "cnn"}
    with pytest.raises(ConfigError, match="train config key 'seed': must be non-negative"):
        validate_config({**base, "seed": -1})
    with pytest.raises(ConfigError, match="train config key 'lr': nan is not a finite number"):
        validate_config({**base, "lr": math.nan})
    with pytest.raises(ConfigError, match=r"'opt_hparams.rho': inf is not a finite"):
        validate_config({**base, "optimizer": "sam", "opt_hparams": {"rho": math.inf}})


def test_every_problem_is_reported_at_once_with_the_nearest_key():
    """A file with several mistakes names them all in one error, the first on the first line,
    and a mistyped key or optimizer names the nearest known one."""
    config = copy.deepcopy(QUICK)
    _set(config, "minorfirst.l1_maxmargin.stpes", 5)
    _set(config, "eos.defaults.seed", -3)
    _set(config, "lesam.groups.cifar10_wrn.overrides.lrr", 0.1)
    _set(config, "lesam.groups.cifar10_wrn.overrides.optimizer", "sgdd")
    _set(config, "bridges.lesam_diagonal.rho", math.nan)
    with pytest.raises(ConfigError) as info:
        check_workflow_config(config, SCHEMA)
    text = str(info.value)
    assert text.startswith("config key bridges.lesam_diagonal.rho: nan is not a finite number")
    assert "and 4 more problem(s)" in text
    assert "('stpes' was unexpected); did you mean 'steps'?" in text
    assert "('lrr' was unexpected); did you mean 'lr'?" in text
    assert "config key eos.defaults.seed: -3 is less than the minimum of 0" in text
    assert "'sgdd' is not one of" in text and "did you mean 'sgd'?" in text


def test_a_key_far_from_every_known_one_lists_them():
    config = _set(copy.deepcopy(QUICK), "minorfirst.l1_maxmargin.zzzzzz", 1)
    with pytest.raises(ConfigError, match=r"'zzzzzz' was unexpected\); known: .*alphas"):
        check_workflow_config(config, SCHEMA)
