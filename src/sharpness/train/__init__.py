"""Training engine: mini-batch and full-batch loops, exact checkpoint/resume, metrics.

>>> from sharpness.train import train, TrainHooks
>>> final = train({"dataset": "mnist_embedded", "model": "cnn", "optimizer": "sam",
...                "opt_hparams": {"rho": 0.05}, "epochs": 2, "lr": 0.05}, "results/run1")

See :mod:`sharpness.train.config` for the keys and :mod:`sharpness.train.engine` for the
files a run writes and the modules the engine is made of. Each public name is imported from
its module when first asked for, so :mod:`sharpness.train.config` (a run's keys, defaults and
checks) is read without torch: the workflow's plan validates every run with it.
"""

from __future__ import annotations

from typing import Any

from sharpness.lazy import lazy_attribute

#: where each public name lives (module in this package)
_HOMES: dict[str, str] = {
    "apply_params": "augment", "augment_batch": "augment", "draw_params": "augment",
    "DEFAULTS": "config", "validate_config": "config",
    "train": "engine",
    "evaluate": "evaluation",
    "BatchStep": "hooks", "StepInfo": "hooks", "StepProbe": "hooks", "TrainHooks": "hooks",
    "per_example_loss": "losses",
    "InputNormalization": "model_io", "load_trained_model": "model_io",
    "lr_at": "schedule",
}


def __getattr__(name: str) -> Any:
    """The public names, each imported from its module when first asked for."""
    return lazy_attribute(__name__, _HOMES, globals(), name)


__all__ = ["DEFAULTS", "BatchStep", "InputNormalization", "StepInfo", "StepProbe", "TrainHooks",
           "apply_params",
           "augment_batch", "draw_params", "evaluate", "load_trained_model", "lr_at",
           "per_example_loss", "train", "validate_config"]
