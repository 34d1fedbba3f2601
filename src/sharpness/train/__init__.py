"""Training engine: mini-batch and full-batch loops, exact checkpoint/resume, metrics.

>>> from sharpness.train import train, TrainHooks
>>> final = train({"dataset": "mnist_embedded", "model": "cnn", "optimizer": "sam",
...                "opt_hparams": {"rho": 0.05}, "epochs": 2, "lr": 0.05}, "results/run1")

See :mod:`sharpness.train.config` for the keys and :mod:`sharpness.train.engine` for the
files a run writes and the modules the engine is made of.
"""

from sharpness.train.augment import apply_params, augment_batch, draw_params
from sharpness.train.config import DEFAULTS, validate_config
from sharpness.train.engine import train
from sharpness.train.evaluation import evaluate
from sharpness.train.hooks import BatchStep, StepInfo, StepProbe, TrainHooks
from sharpness.train.losses import per_example_loss
from sharpness.train.model_io import InputNormalization, load_trained_model
from sharpness.train.schedule import lr_at

__all__ = ["DEFAULTS", "BatchStep", "InputNormalization", "StepInfo", "StepProbe", "TrainHooks",
           "apply_params",
           "augment_batch", "draw_params", "evaluate", "load_trained_model", "lr_at",
           "per_example_loss", "train", "validate_config"]
