"""Data sets: registry, verified resolution (local → mirror → download → clear error), loaders.

The loaders (:mod:`sharpness.data.loaders`, :mod:`~sharpness.data.embedded`,
:mod:`~sharpness.data.composite`, all on :class:`~sharpness.data.arrays.ArrayDataset`) need torch, which takes about 1.6 s of CPU to
import; they are imported on first use (PEP 562 ``__getattr__``), so a command that only
reads the registry or verifies files (``sharpness data prepare``, every figure job) does not
pay for it.
"""

import importlib
from typing import Any

from sharpness.data.fetch import MIRROR_ENV, download_url, resolve, verify
from sharpness.data.registry import (
    DATASETS,
    DatasetSpec,
    FileSpec,
    get_spec,
    preparation_inputs,
)

#: names served lazily, and the module (needing torch) each comes from
_LAZY = {"ArrayDataset": "arrays", "subset": "arrays", "EMBEDDED_DIR": "embedded",
         "load_embedded": "embedded", "load_dataset": "loaders", "load_mnist": "loaders"}

__all__ = ["DATASETS", "EMBEDDED_DIR", "MIRROR_ENV", "ArrayDataset", "DatasetSpec", "FileSpec",
           "download_url", "get_spec", "load_dataset", "load_embedded", "load_mnist",
           "preparation_inputs", "resolve", "subset", "verify"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"sharpness.data.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'sharpness.data' has no attribute {name!r}")
