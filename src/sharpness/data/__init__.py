"""Data sets: registry, verified resolution (local → mirror → download → clear error), loaders.

The loaders (:mod:`sharpness.data.loaders`) need torch, which takes about 1.6 s of CPU to
import; they are imported on first use (PEP 562 ``__getattr__``), so a command that only
reads the registry or verifies files (``sharpness data prepare``, every figure job) does not
pay for it.
"""

from typing import Any

from sharpness.data.fetch import MIRROR_ENV, download_url, resolve, verify
from sharpness.data.registry import DATASETS, DatasetSpec, FileSpec, get_spec

_LOADERS = ("EMBEDDED_DIR", "ArrayDataset", "load_dataset", "load_embedded", "load_mnist",
            "subset")

__all__ = ["DATASETS", "EMBEDDED_DIR", "MIRROR_ENV", "ArrayDataset", "DatasetSpec", "FileSpec",
           "download_url", "get_spec", "load_dataset", "load_embedded", "load_mnist", "resolve",
           "subset", "verify"]


def __getattr__(name: str) -> Any:
    if name in _LOADERS:
        from sharpness.data import loaders

        return getattr(loaders, name)
    raise AttributeError(f"module 'sharpness.data' has no attribute {name!r}")
