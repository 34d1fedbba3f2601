"""The in-memory data set every loader returns, and what is done to one after loading.

Images are float32 tensors in [0, 1], NCHW, and labels int64; normalisation and augmentation
belong to the training code, so that Grad-CAM and intensity-based metrics see the raw pixel
values. This module knows no data set by name: the loaders (one per kind of source, named in
the registry) build an :class:`ArrayDataset`, :func:`subset` trims one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from sharpness.data.fetch import unverified_reason
from sharpness.errors import DataError


@dataclass
class ArrayDataset:
    """A data set held in memory: train and test images and labels, plus where they came from."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    #: provenance entry: name, files and checksums, stand-in note if any
    info: dict[str, Any] = field(default_factory=dict)
    #: per-image side arrays a data set defines (the stand-in's padded digits,
    #: ``digit_train``/``digit_test``), indexed like ``x_train``/``x_test``
    extras: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of one image (C, H, W)."""
        return tuple(self.x_train.shape[1:])


def to_nchw(images: np.ndarray) -> torch.Tensor:
    """uint8 images (N, H, W) or (N, H, W, C) as float32 (N, C, H, W) in [0, 1]."""
    x = torch.from_numpy(np.ascontiguousarray(images)).float().div_(255.0)
    if x.ndim == 3:
        return x.unsqueeze(1)
    return x.permute(0, 3, 1, 2).contiguous()


def labels(values: Any) -> torch.Tensor:
    """Labels (a list or an integer array) as an int64 tensor."""
    return torch.as_tensor(np.asarray(values).astype(np.int64))


def mark_unverified(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with a provenance note when checksum checks are off for its folder."""
    reason = unverified_reason(info["folder"]) if info.get("folder") else None
    if reason:
        info["note"] = f"UNVERIFIED (checksums not checked): {reason}"
        info["unverified"] = reason
    return info


def subset(ds: ArrayDataset, train_size: int | None, test_size: int | None) -> ArrayDataset:
    """The first ``train_size`` / ``test_size`` examples (official order), recorded in info."""
    if train_size is None and test_size is None:
        return ds
    for key, size, have in (("train_size", train_size, len(ds.x_train)),
                            ("test_size", test_size, len(ds.x_test))):
        if size is not None and not 0 < size <= have:
            raise DataError(f"{key}={size} but {ds.name} has {have} examples")
    info = dict(ds.info, train_size=train_size, test_size=test_size)
    extras = {k: _head(v, test_size if k.endswith("_test") else train_size)
              for k, v in ds.extras.items()}
    return ArrayDataset(ds.name, _head(ds.x_train, train_size), ds.y_train[:train_size],
                        _head(ds.x_test, test_size), ds.y_test[:test_size], ds.num_classes, info,
                        extras)


def _head(x: Any, n: int | None) -> Any:
    """The first ``n`` rows: a tensor slice, or a lazy image folder's :meth:`head`."""
    if n is None:
        return x
    return x.head(n) if hasattr(x, "head") else x[:n]
