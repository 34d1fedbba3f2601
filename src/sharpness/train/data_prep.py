"""A run's data: the config's data set from the registry, subset and relabelled, on a device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from sharpness.data import load_dataset
from sharpness.errors import ConfigError


@dataclass
class PreparedData:
    """Train/test tensors on the device, with what the model and the provenance need."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    num_classes: int
    info: dict[str, Any]


def prepare_data(cfg: dict[str, Any], device: torch.device) -> PreparedData:
    """Load the config's data set (registry), subset it, keep/relabel classes, to device."""

    ds = load_dataset(cfg["dataset"], cfg["data_root"], train_size=cfg["train_size"],
                      test_size=cfg["test_size"])
    xtr, ytr, xte, yte = ds.x_train, ds.y_train, ds.x_test, ds.y_test
    num_classes = ds.num_classes
    info = dict(ds.info)
    if cfg["classes"] is not None:
        keep = torch.tensor(cfg["classes"])
        if int(keep.max()) >= num_classes or int(keep.min()) < 0:
            raise ConfigError(f"train config key 'classes': {cfg['classes']} outside "
                              f"0..{num_classes - 1}")
        lut = torch.full((num_classes,), -1, dtype=torch.long)
        lut[keep] = torch.arange(len(keep))
        mtr, mte = lut[ytr] >= 0, lut[yte] >= 0
        xtr, ytr, xte, yte = xtr[mtr], lut[ytr[mtr]], xte[mte], lut[yte[mte]]
        num_classes = len(keep)
        info["classes"] = list(cfg["classes"])
    info.update(n_train=len(xtr), n_test=len(xte))
    return PreparedData(xtr.to(device), ytr.to(device), xte.to(device), yte.to(device),
                        num_classes, info)

