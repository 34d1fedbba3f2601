"""Edge-of-stability study (paper `eos`): norm versus sharpness under full-batch GD.

>>> from sharpness.eos import run_setting
>>> summary = run_setting({"train_size": 128, "lr_factors": [0.5, 2.0]}, "results/eos/x")

Modules: :mod:`~sharpness.eos.toy` (the diagonal toy with its closed forms),
:mod:`~sharpness.eos.flow` (gradient-flow reference: RK45 or CVODE, through
:mod:`~sharpness.eos.integrators`),
:mod:`~sharpness.eos.setting` (a setting's keys and defaults, torch-free),
:mod:`~sharpness.eos.sweep` (one setting: flow, then the GD learning-rate sweep),
:mod:`~sharpness.eos.norms`, :mod:`~sharpness.eos.measures` (sharpness measures),
:mod:`~sharpness.eos.figures` (the six figures).
"""

from importlib import import_module
from typing import Any

# Imported on first use (PEP 562): the figures and the toy need neither torch nor the flow,
# and importing torch costs a figure job about 1.6 s of CPU.
_EXPORTS: dict[str, tuple[str, str]] = {
    **{n: ("flow", n) for n in ("FlowResult", "gradient_flow")},
    **{n: ("measures", n) for n in ("adaptive_sharpness", "all_measures", "average_sharpness",
                                     "hessian_trace", "sharpness", "worst_case_sharpness")},
    **{n: ("norms", n) for n in ("l1_norm", "l2_norm", "nuclear_norm", "parameter_norms")},
    **{n: ("setting", n) for n in ("FLOW_DEFAULTS", "MEASURE_DEFAULTS", "SETTING_DEFAULTS",
                                    "resolve_setting")},
    **{n: ("sweep", n) for n in ("build_initial", "engine_config", "learning_rates", "run_flow",
                                  "run_setting", "run_sweep")},
    **{n: ("toy", n) for n in ("CATALOG_EXAMPLE", "DiagonalToy", "ToyFlow", "ToyRun", "gd",
                                "teacher_risk")},
    "toy_gradient_flow": ("toy", "gradient_flow"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        return getattr(import_module(f"sharpness.eos.{module}"), attr)
    raise AttributeError(f"module 'sharpness.eos' has no attribute {name!r}")
