"""An `eos` setting's keys and defaults, and a setting resolved against them.

The run (:func:`sharpness.eos.sweep.run_setting`), the SAM bridge, the cost model and the
resume pricing all read a setting through :func:`resolve_setting`, so a key a profile leaves
out is priced at the value the run uses. Pure Python, no torch: the planner imports it.
"""

from __future__ import annotations

from typing import Any

from sharpness.errors import ConfigError, reject_unknown
from sharpness.mappings import deep_merge

#: Defaults of a setting; the config overrides any of them.
SETTING_DEFAULTS: dict[str, Any] = {
    "label": None,  # figure label, e.g. "MNIST-128 / FCN / MSE"
    "ablation": None,  # set by sharpness.eos.config for ablation variants
    "dataset": "mnist_embedded",
    "train_size": 128,
    "test_size": 500,
    "classes": None,
    "normalize": False,
    "stand_ins": [],
    "model": "fcn",
    "width": 1.0,
    "model_kwargs": {},
    "loss": "mse",
    "loss_goal": 0.01,
    "seed": 0,
    "lrs": [],
    "lr_factors": [],
    "max_steps": 5000,
    "sharpness_every": 50,
    "log_every": 10,
    "checkpoint_every": 1000,
    "diverge_loss": 1e4,
    "fullbatch_chunk": None,
    "device": "auto",
    "flow": {},
    "measures": {},
    "lanczos_tol": 1e-3,
}
#: Gradient-flow settings (:func:`sharpness.eos.flow.gradient_flow`). ``method`` is ``RK45``
#: (explicit, the reference) or ``cvode`` (BDF + matrix-free GMRES, for stiff flows);
#: ``max_evals`` caps gradients + 2 x Hessian-vector products.
FLOW_DEFAULTS: dict[str, Any] = {"method": "RK45", "rtol": 1e-4, "atol": 1e-7, "t_max": 1e4,
                                 "record_factor": 4.0, "record_growth": 0.1,
                                 "record_first_drop": 0.5, "max_evals": 200_000,
                                 "krylov_dim": 20}
MEASURE_DEFAULTS: dict[str, Any] = {"rho": 0.05, "adaptive_rho": 0.05, "sigma": 0.01,
                                    "trace_samples": 20, "ascent_steps": 5, "avg_samples": 10}


def resolve_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """``setting`` with defaults filled in; unknown keys raise ``ConfigError`` naming them."""
    for name, known, given in (("setting", SETTING_DEFAULTS, setting),
                               ("flow", FLOW_DEFAULTS, setting.get("flow", {})),
                               ("measures", MEASURE_DEFAULTS, setting.get("measures", {}))):
        reject_unknown(f"eos {name}", given, known)
    defaults = deep_merge(SETTING_DEFAULTS, {"flow": FLOW_DEFAULTS,
                                             "measures": MEASURE_DEFAULTS})
    out = deep_merge(defaults, setting)  # flow and measures merge key by key
    if not out["lrs"] and not out["lr_factors"]:
        raise ConfigError("eos setting needs 'lrs' (absolute) or 'lr_factors' (x eta_c)")
    if out["loss"] not in ("mse", "ce"):
        raise ConfigError(f"eos setting 'loss' must be 'mse' or 'ce', got {out['loss']!r}")
    return out
