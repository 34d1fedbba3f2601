"""Edge-of-stability study (paper `eos`): norm versus sharpness under full-batch GD.

>>> from sharpness.eos import run_setting
>>> summary = run_setting({"train_size": 128, "lr_factors": [0.5, 2.0]}, "results/eos/x")

Modules: :mod:`~sharpness.eos.toy` (the diagonal toy with its closed forms),
:mod:`~sharpness.eos.flow` (gradient-flow reference with ``solve_ivp``),
:mod:`~sharpness.eos.sweep` (one setting: flow, then the GD learning-rate sweep),
:mod:`~sharpness.eos.norms`, :mod:`~sharpness.eos.measures` (sharpness measures),
:mod:`~sharpness.eos.figures` (the six figures).
"""

from sharpness.eos.flow import FlowResult, gradient_flow
from sharpness.eos.measures import (
    adaptive_sharpness,
    all_measures,
    average_sharpness,
    hessian_trace,
    sharpness,
    worst_case_sharpness,
)
from sharpness.eos.norms import l1_norm, l2_norm, nuclear_norm, parameter_norms
from sharpness.eos.sweep import (
    build_initial,
    engine_config,
    learning_rates,
    resolve_setting,
    run_flow,
    run_setting,
    run_sweep,
)
from sharpness.eos.toy import CATALOG_EXAMPLE, DiagonalToy, ToyFlow, ToyRun, gd, teacher_risk
from sharpness.eos.toy import gradient_flow as toy_gradient_flow

__all__ = [
    "CATALOG_EXAMPLE", "DiagonalToy", "FlowResult", "ToyFlow", "ToyRun", "adaptive_sharpness",
    "all_measures", "average_sharpness", "build_initial", "engine_config", "gd",
    "gradient_flow", "hessian_trace", "l1_norm", "l2_norm", "learning_rates", "nuclear_norm",
    "parameter_norms", "resolve_setting", "run_flow", "run_setting", "run_sweep", "sharpness",
    "teacher_risk", "toy_gradient_flow", "worst_case_sharpness",
]
