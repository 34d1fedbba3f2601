"""Data sets: registry, verified resolution (local → mirror → download → clear error), loaders."""

from sharpness.data.fetch import MIRROR_ENV, download_url, resolve, verify
from sharpness.data.loaders import (
    EMBEDDED_DIR,
    ArrayDataset,
    load_dataset,
    load_embedded,
    load_mnist,
    subset,
)
from sharpness.data.registry import DATASETS, DatasetSpec, FileSpec, get_spec

__all__ = ["DATASETS", "EMBEDDED_DIR", "MIRROR_ENV", "ArrayDataset", "DatasetSpec", "FileSpec",
           "download_url", "get_spec", "load_dataset", "load_embedded", "load_mnist", "resolve",
           "subset", "verify"]
